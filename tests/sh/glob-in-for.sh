# globs in for, case patterns are not globbed
: > one.c; : > two.c
for f in *.c; do echo "file $f"; done
case one.c in *.c) echo matched;; esac
