# && and || left to right
true && echo a
false && echo never
false || echo b
true || echo never
false && echo no || echo c
true && false || echo d
echo one &&
  echo two
