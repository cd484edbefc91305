# a redirection error on a special builtin ends the script
echo before
: > nodir/file
echo never
