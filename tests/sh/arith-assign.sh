# assignments inside arithmetic
i=0
: $((i += 5))
: $((i *= 2))
echo $i
echo $((j = 3)) $j
