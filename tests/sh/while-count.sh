# while with arithmetic
i=0
while [ $i -lt 5 ]; do
  echo "i=$i"
  i=$((i + 1))
done
