# file tests
echo data > f
mkdir d
: > empty
[ -e f ] && echo exists
[ -f f ] && echo regular
[ -d d ] && echo directory
[ -f d ] || echo not-regular
[ -s f ] && echo nonzero
[ -s empty ] || echo zero-size
[ -e nope ] || echo missing
