# basename and dirname, POSIX's examples and edge cases
basename /usr/lib/libc.a
basename /usr/lib/libc.a .a
basename libc.a libc.a
basename /usr/lib/
basename /
basename -a /x/y z/w
basename -s .c a.c b/d.c
dirname /usr/lib/libc.a
dirname /usr/lib/
dirname libc.a
dirname /
dirname //x
dirname a/b/c d
basename
echo "rc $?"
dirname
echo "rc $?"
