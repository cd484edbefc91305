# break and continue, with counts
for i in 1 2 3 4 5; do
  [ $i = 2 ] && continue
  [ $i = 4 ] && break
  echo $i
done
for i in 1 2; do
  for j in 1 2; do
    [ $j = 2 ] && continue 2
    echo "$i.$j"
  done
done
for i in x y; do while true; do break 2; done; echo never; done
echo done
