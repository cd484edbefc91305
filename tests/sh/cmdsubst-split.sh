# unquoted substitutions are split, quoted ones not
set -- $(echo "a  b   c")
echo $#
set -- "$(echo "a  b   c")"
echo $#
