# set -- and shift
set -- a b c d
echo $# $1 $4
shift; echo $# $1
shift 2; echo $# $1
set --; echo $#
set -- "x y" z; echo $#
