# IFS for one read only
printf 'k1=v1\nk2=v2\n' > kv
while IFS='=' read key value; do
  echo "key=$key value=$value"
done < kv
echo "IFS is back: [$IFS]"
