# redirections apply left to right
{ echo out; echo err >&2; } > both 2>&1
cat both
{ echo out; echo err >&2; } 2>&1 > only 2>/dev/null
echo ---
cat only
