# cat refuses to copy a file onto itself (GNU cat's "input file is output
# file"), and "" is a command not found (issue 16).
echo hello > a
cat a >> a
echo "cat a >> a status $?"
cat a
cat a b >> a
echo "cat a b >> a status $?"
echo world > b
cat b a >> a
echo "cat b a >> a status $?"
cat a
cat a > c
cat c
""
echo "empty command status $?"
