# numbers to Roman numerals with a table in a here-document
roman() {
  n=$1 out=
  while read value sym; do
    while [ $n -ge $value ]; do out=$out$sym; n=$((n - value)); done
  done <<EOF
1000 M
900 CM
500 D
400 CD
100 C
90 XC
50 L
40 XL
10 X
9 IX
5 V
4 IV
1 I
EOF
  echo "$1 = $out"
}
for y in 1 4 9 14 40 90 400 1994 2024; do roman $y; done
