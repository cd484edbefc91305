# field splitting at IFS
line=root:x:0:0:root:/root:/bin/sh
IFS=:
set -- $line
echo $# $1 $6
IFS=' '
v='  spaced   out  '
set -- $v
echo $# "$1" "$2"
