# bubble sort of numbers held in positional parameters
sort_nums() {
  n=$#
  i=0
  for v; do eval "a$i=$v"; i=$((i + 1)); done
  swapped=1
  while [ $swapped -eq 1 ]; do
    swapped=0
    j=0
    while [ $j -lt $((n - 1)) ]; do
      eval "x=\$a$j; y=\$a$((j + 1))"
      if [ $x -gt $y ]; then
        eval "a$j=$y; a$((j + 1))=$x"
        swapped=1
      fi
      j=$((j + 1))
    done
  done
  out=
  j=0
  while [ $j -lt $n ]; do eval "out=\"\$out \$a$j\""; j=$((j + 1)); done
  echo "sorted:$out"
}
sort_nums 5 3 9 1 7 2
