# shift past the end is an error
set -- a
shift 2
echo "status $?"
