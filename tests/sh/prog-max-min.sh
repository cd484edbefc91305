# the largest and smallest of the arguments
stats() {
  max=$1 min=$1 sum=0
  for v; do
    [ $v -gt $max ] && max=$v
    [ $v -lt $min ] && min=$v
    sum=$((sum + v))
  done
  echo "n=$# max=$max min=$min sum=$sum avg=$((sum / $#))"
}
stats 4 8 15 16 23 42
stats -5 0 5
stats 7
