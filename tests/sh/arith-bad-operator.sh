# an operator dash does not have is an error, not something else
x=1
echo $((x++))
echo never
