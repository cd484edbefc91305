# ${10} and beyond, $# and shifting
set -- a b c d e f g h i j k
echo "$1 ${10} ${11} $#"
echo "$10"
shift 9
echo "$1 $2 $#"
