# $? after a signal's trap is what it was before
trap 'false' USR1
true
kill -USR1 $$
echo "status $?"
