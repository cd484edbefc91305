# set -n: the rest is read but not run
echo before
set -n
echo never
exit 5
