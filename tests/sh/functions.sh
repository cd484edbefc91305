# functions, arguments, return
greet() { echo "hello, $1 ($# args)"; }
greet world extra
add() { return $(($1 + $2)); }
add 2 3; echo "sum status $?"
f() {
  echo "in f: $@"
}
f a b c
echo "back: $# args"
