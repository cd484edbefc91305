# set -e in functions and conditions
set -e
f() { false; echo "not reached"; }
if f; then echo "f true"; else echo "f false"; fi
g() { return 3; }
g || echo "g failed with $?"
! g
echo "still here"
f
echo never
