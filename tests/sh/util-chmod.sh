# chmod: octal and symbolic modes, seen through test -x; bad modes
echo 'echo hi' > f
chmod 600 f
[ -x f ] || echo not-executable
chmod u+x f
[ -x f ] && echo executable
chmod a-x f
[ -x f ] || echo not-executable
chmod 755 f
[ -x f ] && echo executable
chmod u=rw,go=r f
[ -x f ] || echo not-executable
chmod 999 f
echo "rc $?"
chmod u+z f
echo "rc $?"
chmod u+x missing
echo "rc $?"
chmod 644
echo "rc $?"
