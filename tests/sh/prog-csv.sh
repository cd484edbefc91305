# reading comma-separated records
cat > data.csv <<EOF
name,qty,price
apple,3,5
pear,10,2
plum,0,9
EOF
total=0
{
  read header
  while IFS=, read name qty price; do
    cost=$((qty * price))
    total=$((total + cost))
    printf '%-6s %3d x %2d = %4d\n' "$name" "$qty" "$price" "$cost"
  done
} < data.csv
echo "total $total"
