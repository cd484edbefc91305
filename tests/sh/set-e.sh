# set -e stops at a failing command, not in conditions
set -e
if false; then :; fi
false || true
! true
while false; do :; done
echo still running
f() { false; echo not reached when called plainly; }
f || echo f failed in a condition
false
echo never
