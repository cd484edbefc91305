# exit in a subshell or substitution ends only that
(exit 4); echo "sub $?"
x=$(echo out; exit 2); echo "x=$x status $?"
f() { (exit 9); }; f; echo "f $?"
