# IFS with non-white characters
IFS=:
x="a::b:"
set -- $x
echo $#
for w in $x; do printf '[%s]' "$w"; done; echo
IFS=' :'
y=" a : b "
set -- $y
echo $# "$1" "$2"
unset IFS
