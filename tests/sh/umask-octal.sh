# umask prints and sets the file-creation mask
umask
umask 027
umask
umask -S
umask 0
umask
umask 777
umask -S
