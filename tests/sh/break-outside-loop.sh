# break and continue in functions called from loops
f() { break; }
for i in 1 2 3; do echo $i; f; done
echo after
