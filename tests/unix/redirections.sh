# Redirections: > >> < 2> 2>&1 >&2 and their errors.
echo first > out
echo second >> out
echo third >> out
cat out
wc -l < out
cat < out > copy
cat copy
echo replaced > out
cat out
cat missing 2> err
echo cat status $?
cat err
cat missing 2>&1 > /dev/null
echo to stderr >&2 2> /dev/null
echo to stderr again 1>&2
cat out missing > both 2> errors
cat both
cat errors
cat < missing
echo input redirection status $?
echo x > nodir/file
echo output redirection status $?
echo > .
echo directory status $?
echo 3>three text for fd 1
cat three
echo empty > e; > e
wc -c e
