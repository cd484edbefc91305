# decimal to binary and hexadecimal
tobin() {
  n=$1 bits=
  [ $n -eq 0 ] && bits=0
  while [ $n -gt 0 ]; do bits=$((n % 2))$bits; n=$((n / 2)); done
  echo $bits
}
for v in 0 1 5 10 255 1024; do
  printf '%5d %12s %4x %4o\n' $v $(tobin $v) $v $v
done
echo $((0x1f + 010 + 2))
