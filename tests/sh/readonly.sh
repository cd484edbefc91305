# readonly variables, listed with -p
readonly A=1 B
echo "A=$A"
readonly -p
readonly C=3
readonly
(C=4) 2>/dev/null
echo "subshell status $?"
echo "C=$C"
