# substitutions inside arithmetic and parameter words
n=3
echo $(( $(echo 4) * n ))
echo ${u:-$(echo default from subst)}
echo "$(( $(printf '%s' 2) + $((3 * 3)) ))"
