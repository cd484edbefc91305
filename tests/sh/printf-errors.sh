# printf with a bad number reports it and returns 1
printf '%d\n' abc
echo "status $?"
printf '%d %d\n' 1 2x
echo "status $?"
