# quotes inside expansions and substitutions
x='a b'
echo "[$x]" '[$x]' [$x]
echo "$(echo "inner \"quoted\"")"
echo "${x:+"alt $x"}"
echo ${u:-'single $x'}
