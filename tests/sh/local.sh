# local variables (dash's extension) are restored when the function returns
x=global
f() {
  local x=local y
  echo "in f: x=$x y=${y-unset}"
  y=set
  g
}
g() { echo "in g: x=$x y=$y"; }
y=outer
f
echo "after: x=$x y=$y"
