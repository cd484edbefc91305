# read splits into variables; the last takes the rest
printf 'a b c d\n' > in
read x y z < in
echo "x=$x y=$y z=$z"
printf 'back\\slash\n' > in2
read r < in2; echo "$r"
read -r r < in2; echo "$r"
read nothing < /dev/null; echo "eof status $?"
