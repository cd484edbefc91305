# a bad mask is an error (status 2) and changes nothing
umask 022
umask 999
echo "status $?"
umask u=q
echo "status $?"
umask
