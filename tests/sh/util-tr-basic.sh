# tr: ranges, classes, padding of SET2
echo 'Hello, World' | tr a-z A-Z
echo 'Hello, World' | tr '[:upper:]' '[:lower:]'
echo 'abcdef' | tr abc x
echo 'abcdef' | tr a-c 'x*'
echo 'a b c' | tr ' ' '\n'
printf 'tab\tsep\n' | tr '\t' :
echo 'hello' | tr el ip
echo 'abc' | tr 'a-c' '[x*]'
