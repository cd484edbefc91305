# read -r keeps backslashes; read without it uses them
printf '%s\n' 'a\tb\\c' 'line\' 'continued' > in
read x < in
printf '%s\n' "$x"
read -r y < in
printf '%s\n' "$y"
{ read a; read b; } < in
printf '[%s] [%s]\n' "$a" "$b"
{ read -r a; read -r b; } < in
printf '[%s] [%s]\n' "$a" "$b"
