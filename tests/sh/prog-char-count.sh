# counting characters, vowels and words of a string
s="The quick brown fox jumps over the lazy dog"
echo "length ${#s}"
vowels=0
rest=$s
while [ -n "$rest" ]; do
  c=${rest%"${rest#?}"}
  rest=${rest#?}
  case $c in [aeiouAEIOU]) vowels=$((vowels + 1)) ;; esac
done
echo "vowels $vowels"
set -- $s
echo "words $#"
