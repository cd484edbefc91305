# test with !, -a, -o and parentheses
t() { if test "$@"; then echo true; else echo false; fi; }
t 1 -eq 1 -a 2 -eq 2
t 1 -eq 1 -a 2 -eq 3
t 1 -eq 2 -o 2 -eq 2
t ! 1 -eq 2
t \( 1 -eq 1 -o 1 -eq 2 \) -a 3 -eq 3
t -n "" -o -z ""
t abc
t ""
[ "a" = "a" ] && [ "a" != "b" ] && echo both
