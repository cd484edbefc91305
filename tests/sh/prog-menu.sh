# a menu loop driven by input lines
run() {
  while read choice arg; do
    case $choice in
      add) total=$((total + arg)); echo "added $arg" ;;
      sub) total=$((total - arg)); echo "subtracted $arg" ;;
      show) echo "total is $total" ;;
      quit) echo bye; return 0 ;;
      '') ;;
      *) echo "unknown: $choice" ;;
    esac
  done
  echo "input ended"
}
total=0
run <<EOF
add 5
add 10

sub 3
mul 2
show
quit
add 100
EOF
echo "final $total"
