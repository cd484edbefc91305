# command substitutions inside each other and inside quotes
echo $(echo a $(echo b $(echo c)))
echo "$(echo "inner \"quotes\"")"
x=$(printf 'trailing\n\n\n')
echo "[$x]"
y=$(printf '\nleading')
echo "[$y]"
echo `echo back \`echo nested\``
n=$(($(echo 3) + $(echo 4)))
echo $n
