# Users and limits (docs/reliability.md): the boot image's users, id,
# whoami, su with right and wrong passwords (read from standard input,
# which is not a terminal here), ulimit in the shell and as a user.
id
id user
id -un guest
whoami
ls -l /etc/shadow | cut -c1-10
(
  ulimit -n 5
  ulimit -n
  exec 3</dev/null 4</dev/null
  echo fds 3 and 4 status $?
  cat </dev/null 5</dev/null
  echo fd 5 past the limit status $?
  ulimit -Sn 4
  exec 3<&- 4<&-
  sh -c 'ulimit -n; ulimit -Hn'
)
su user -c 'whoami; ulimit -u; ulimit -d; cat /etc/shadow; echo shadow status $?'
su user -c 'ulimit -u 10; ulimit -Hu 11; echo raise status $?; ulimit -u'
su user -c 'echo guest | su guest -c "id -u; echo \$HOME"; echo su status $?'
su user -c 'echo wrong | su guest -c "echo RAN"; echo su status $?'
su user -c 'echo user | su -c "id -u"; echo su root status $?'
su - guest -c 'pwd; echo $USER $SHELL'
su nobody
echo unknown user status $?
