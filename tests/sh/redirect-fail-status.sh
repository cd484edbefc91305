# a redirection that fails gives status 2 and the script goes on
cat < nosuch
echo "cat $?"
echo x > nodir/file
echo "echo $?"
{ echo grouped; } > nodir/file
echo "group $?"
f() { echo in f; }
f > nodir/file
echo "function $?"
x=1 > nodir/file
echo "assign $?"
