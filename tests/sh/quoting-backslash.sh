# backslash quoting in and out of double quotes
echo \$x \"q\" \\ \a
echo "\$x \"q\" \\ \a \n"
echo 'single \ stays' "double \' stays"
echo a\
b
echo "line\
joined"
