# set -f turns globbing off
: > a1; : > a2
echo a*
set -f
echo a*
set +f
echo a?
