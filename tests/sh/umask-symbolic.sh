# symbolic umask forms
umask 022
umask u=rwx,g=rx,o=
umask
umask a-w
umask
umask g+w
umask
umask o=r
umask -S
umask ug=rwx,o=
umask
