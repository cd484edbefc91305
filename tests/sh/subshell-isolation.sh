# a subshell's changes stay in it
x=outer
(x=inner; echo "in: $x"; cd /; f() { :; })
echo "out: $x"
command -v f || echo "no f"
mkdir d
(cd d && ls ..)
ls
(exit 4)
echo "status $?"
