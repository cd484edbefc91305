# a stack kept in a string
stack=
push() { stack="$1 $stack"; }
pop() {
  set -- $stack
  top=$1
  shift
  stack="$*"
}
push a; push b; push c
pop; echo "popped $top"
push d
pop; echo "popped $top"
pop; echo "popped $top"
echo "left: $stack"
