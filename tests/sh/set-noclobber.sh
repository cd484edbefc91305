# set -C: > does not overwrite an existing file, >| does
echo one > f
set -C
echo two > f
echo "status $?"
cat f
echo three >| f
cat f
echo new > g
cat g
echo dev > /dev/null
echo "devnull status $?"
set +C
echo four > f
cat f
