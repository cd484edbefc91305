# command NAME runs NAME without looking for a function
echo() { printf 'function echo: %s\n' "$*"; }
echo hello
command echo plain
unset -f echo
echo back
f() { printf 'f ran\n'; }
command f 2>/dev/null
echo "status $?"
