# backslashes inside backquotes
echo `echo '\$HOME'`
echo `echo "a\\\\b"`
x=val
echo `echo \$x`
echo "`echo "quoted in backquotes"`"
