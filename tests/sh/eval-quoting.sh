# eval re-reads its arguments
cmd='echo "one  two"'
eval "$cmd"
eval echo '$((2 + 3))'
var=name
eval "$var=assigned"
echo "$name"
eval 'for i in 1 2; do echo "i=$i"; done'
eval "false"
echo "status $?"
eval ''
echo "empty $?"
