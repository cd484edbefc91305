# $# $? $@ $* and "$@"
set -- "a b" c ""
echo $#
for x in "$@"; do echo "[$x]"; done
for x in $@; do echo "($x)"; done
for x in "$*"; do echo "{$x}"; done
false; echo $?
