# exec with only redirections changes the shell's descriptors
exec 5> log
echo first >&5
echo second >&5
exec 5>&-
cat log
exec 6< log
read a <&6
echo "got $a"
exec 6<&-
