# set -u: an unset parameter is an error
set -u
x=1
echo $x ${y:-default}
echo $y
echo never
