# return's status and return without a number
f() { false; return; }
f
echo "f $?"
g() { return 7; }
g
echo "g $?"
h() { (return 4); echo "sub $?"; return 0; }
h
echo "h $?"
