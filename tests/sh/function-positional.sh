# a function's positional parameters, restored after it
set -- outer1 outer2
f() {
  echo "in f: $# [$*]"
  set -- changed
  echo "after set: $1"
}
f a "b c" d
echo "back: $# [$*]"
g() { shift; echo "$@"; }
g 1 2 3
