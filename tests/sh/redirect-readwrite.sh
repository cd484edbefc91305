# <> opens for reading and writing, creating the file
echo hello > f
exec 3<> f
read line <&3
echo "read: $line"
exec 3>&-
cat <> new
echo "status $?"
[ -f new ] && echo created
