# test's usage errors give status 2
[ 1 -eq ]
echo "status $?"
[ abc -lt 3 ]
echo "status $?"
[ 1 = 1
echo "status $?"
test 1 -eq 1 extra
echo "status $?"
