# variables in arithmetic: bare names, unset ones, assignment forms
x=5
echo $((x + 1)) $(($x + 1)) $((unset_var + 2))
: $((z = 4))
echo "z=$z"
: $((z += 3)) $((z *= 2))
echo "z=$z"
: $((z -= 4)) $((z /= 2)) $((z %= 4))
echo "z=$z"
n=0
while [ $((n += 1)) -lt 4 ]; do printf '%s ' $n; done
echo
