# read: the last name takes the rest of the line
echo "one two three four" > in
read a b < in
echo "a=$a b=$b"
read a b c d e < in
echo "d=$d e=[$e]"
echo "  lead and trail  " > sp
read v < sp
echo "[$v]"
IFS= read v < sp
echo "[$v]"
printf 'no newline' | { read v; echo "status $? [$v]"; }
