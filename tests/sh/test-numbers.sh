# numeric comparisons
for p in "1 -eq 1" "1 -ne 2" "2 -gt 1" "1 -ge 1" "1 -lt 2" "2 -le 2" "3 -lt 2"; do
  if [ $p ]; then echo "$p: true"; else echo "$p: false"; fi
done
[ 1 -eq x ] 2>/dev/null; echo "bad number: $?"
