# hash knows commands that exist
hash ls
echo "ls $?"
hash nosuch_command 2>/dev/null
echo "nosuch $?"
hash -r
echo "reset $?"
