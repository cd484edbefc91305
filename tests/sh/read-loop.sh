# a word counter with while read
cat > words.txt <<EOF
the quick brown fox
jumps over
the lazy dog
EOF
lines=0; words=0
while read line; do
  lines=$((lines + 1))
  set -- $line
  words=$((words + $#))
done < words.txt
echo "$lines lines, $words words"
