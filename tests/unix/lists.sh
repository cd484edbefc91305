# Lists: ; && || and the exit status $?.
true; echo after true $?
false; echo after false $?
true && echo and after true
false && echo never printed
false || echo or after false
true || echo never printed either
false && echo no || echo yes
true && false || echo fallback $?
true && true && echo chain $?
echo one; echo two ; echo three
sh -c 'exit 3'
echo exit status $?
sh -c 'exit 300'
echo exit status modulo 256 $?
sh -c 'exit 7' && echo not this || echo status seen $?
X=value; echo X is $X
echo "quoted  spaces" 'single $X' "double $X" \$X
echo $?
false
