# a subshell's umask does not change the parent's
umask 022
(umask 077; umask)
umask
x=$(umask 007; umask)
echo "$x"
umask
