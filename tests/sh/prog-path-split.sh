# splitting a PATH-like string at colons
list=/usr/local/bin:/usr/bin::/bin
old_ifs=$IFS
IFS=:
n=0
for dir in $list; do
  n=$((n + 1))
  echo "$n: [${dir:-.}]"
done
IFS=$old_ifs
set -- $list
echo "unchanged IFS: $#"
