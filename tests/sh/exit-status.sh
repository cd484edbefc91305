# exit with a status; code after it does not run
echo before
exit 3
echo never
