# command substitution
x=$(echo hello)
echo "$x world"
echo "$(printf 'a\n\n\n')|"
echo `echo backquotes`
echo $(echo $(echo nested))
n=$(printf '%s\n' a b c | wc -l)
echo $((n + 0))
