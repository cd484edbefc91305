# numbering the lines of a file, as cat -n would
cat > poem <<'EOF'
Roses are red,
  violets are blue;

shells read lines
and so do you.
EOF
n=0
while IFS= read -r line; do
  n=$((n + 1))
  printf '%6d\t%s\n' $n "$line"
done < poem
