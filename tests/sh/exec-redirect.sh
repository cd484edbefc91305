# exec with only redirections changes the shell's descriptors
exec 3> out.txt
echo to three >&3
echo more >&3
exec 3>&-
cat out.txt
