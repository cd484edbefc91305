# set with options and operands, and set --
set -- -x
echo "$1"
set -f -- a '*'
echo "$# $2"
set +f
set -- 
echo "$#"
set a b c
echo "$*"
