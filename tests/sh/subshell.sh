# ( ) does not change the parent
x=1; (x=2; echo in $x); echo out $x
(cd /; pwd)
(exit 7); echo "status $?"
