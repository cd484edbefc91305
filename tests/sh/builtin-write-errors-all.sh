# every builtin that prints reports a failed write and returns 1
echo x >&-
echo "echo $?"
printf x >&-
echo "printf $?"
pwd >&-
echo "pwd $?"
set >&-
echo "set $?"
export WRITE_TEST=1
export -p >&-
echo "export $?"
trap 'echo t' USR1
trap >&-
echo "trap $?"
umask >&-
echo "umask $?"
umask -S >&-
echo "umask -S $?"
command -v echo >&-
echo "command $?"
type echo >&-
echo "type $?"
set -o >&-
echo "set -o $?"
set +o >&-
echo "set +o $?"
jobs >&-
echo "jobs $?"
OLDPWD=/
cd - >&-
echo "cd - $?"
