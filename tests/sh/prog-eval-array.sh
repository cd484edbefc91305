# arrays emulated with eval
n=0
for word in zero one two three; do
  eval "item_$n=\$word"
  n=$((n + 1))
done
i=$((n - 1))
while [ $i -ge 0 ]; do
  eval "echo \"$i: \$item_$i\""
  i=$((i - 1))
done
