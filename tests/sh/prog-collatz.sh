# the length of Collatz sequences
collatz() {
  n=$1 steps=0
  while [ $n -ne 1 ]; do
    if [ $((n % 2)) -eq 0 ]; then n=$((n / 2)); else n=$((3 * n + 1)); fi
    steps=$((steps + 1))
  done
  echo "$1: $steps steps"
}
for s in 1 6 7 27; do collatz $s; done
