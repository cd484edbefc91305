# test and [ on strings
[ abc = abc ] && echo eq
[ abc != abd ] && echo ne
[ -n "x" ] && echo nonempty
[ -z "" ] && echo empty
[ "" ] || echo empty-false
test x && echo bare
[ ! a = b ] && echo not
[ a = a -a b = b ] && echo and
[ a = b -o b = b ] && echo or
