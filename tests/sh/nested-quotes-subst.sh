# quotes inside substitutions inside quotes
x="$(echo "a  b")"
echo "$x"
echo "${x:+"$x"}"
echo "$(echo '$HOME')"
echo "$(printf '%s\n' "it's")"
y="pre $(echo "mid $(echo "deep")") post"
echo "$y"
