# greatest common divisor and least common multiple
gcd() {
  a=$1 b=$2
  while [ $b -ne 0 ]; do t=$((a % b)); a=$b; b=$t; done
  echo $a
}
for pair in "12 18" "17 5" "100 75" "0 9"; do
  set -- $pair
  g=$(gcd $1 $2)
  echo "gcd($1,$2)=$g"
done
echo "lcm(4,6)=$((4 * 6 / $(gcd 4 6)))"
