# descriptors above 2
exec 3> out
echo to three >&3
echo more >&3
exec 3>&-
cat out
exec 4< out
read first <&4
read second <&4
exec 4<&-
echo "$first / $second"
{ echo err >&2; echo out; } 2>/dev/null
