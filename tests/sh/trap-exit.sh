# trap EXIT: runs when the script ends, with $? the exit status
trap 'echo "exiting with $?"' EXIT
echo working
false
