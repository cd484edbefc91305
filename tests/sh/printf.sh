# the printf builtin
printf '%s\n' one two three
printf '%d-%d\n' 1 2 3 4
printf '[%5s] [%-5s] [%05d] [%x] [%o]\n' ab cd 42 255 8
printf '%c%c\n' hello world
printf 'no newline'; echo
printf '%%\n'
