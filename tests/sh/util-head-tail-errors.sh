# head and tail: a missing file, a bad count
printf 'one\ntwo\n' > f
head -n 1 f missing
echo "rc $?"
tail -n 1 missing f
echo "rc $?"
head -n x f
echo "rc $?"
tail -c 1z f
echo "rc $?"
head -q -n 1 f f
