# exec replaces the shell
echo before
exec sh -c 'echo "in exec $1"' sh arg
echo never
