# arithmetic errors end the script with status 2
x=010
echo $((x + 1))
y=" 3 "
echo $((y * 2))
a=3
echo $((a <<= 1)) $a
echo $((1 / 0))
echo never
