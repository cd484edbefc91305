# walking the arguments with shift
set -- -a -b "c d" e
while [ $# -gt 0 ]; do
  echo "arg: [$1] ($# left)"
  shift
done
set -- 1 2 3 4 5
shift 2
echo "$*"
shift 3
echo "[$*] $#"
