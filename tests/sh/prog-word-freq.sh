# counting words with case and a here-document
count_a=0 count_the=0 other=0
while read line; do
  for w in $line; do
    case $w in
      a|A) count_a=$((count_a + 1)) ;;
      the|The) count_the=$((count_the + 1)) ;;
      *) other=$((other + 1)) ;;
    esac
  done
done <<EOF
The cat saw a dog
and the dog saw a cat
A bird saw the cat and the dog
EOF
echo "a=$count_a the=$count_the other=$other"
