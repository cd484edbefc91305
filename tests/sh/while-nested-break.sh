# break and continue with counts in nested loops
i=0
while [ $i -lt 3 ]; do
  i=$((i + 1))
  j=0
  until [ $j -ge 3 ]; do
    j=$((j + 1))
    [ $j -eq 2 ] && continue
    [ $i -eq 2 ] && continue 2
    [ $i -eq 3 ] && break 2
    echo "i=$i j=$j"
  done
done
echo "ended at i=$i j=$j"
