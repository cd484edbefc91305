# function definitions: names, redefinition, bodies that are not groups
f() { echo first; }
f
f() { echo second; }
f
g() (echo "subshell body"; x=changed)
x=kept
g
echo $x
h() if true; then echo "if body"; fi
h
k() for i in 1 2; do echo "for $i"; done
k
