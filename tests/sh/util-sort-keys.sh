# sort -k and -t: fields, numeric keys, several keys
LC_ALL=C
export LC_ALL
printf 'bob 25 paris\nalice 30 rome\ncarol 25 oslo\ndave 4 bern\n' > people
sort -k 2n people
sort -k2,2n -k1,1r people
sort -k 3 people
sort -k 1.2,1.3 people
printf 'x:3:a\ny:1:b\nz:2:c\nw:1:a\n' > colon
sort -t: -k2,2 colon
sort -t : -k 3,3 -k 1,1 colon
sort -t: -k2n -u colon
sort -k 2b people
printf 'a  2\nb 10\nc   1\n' | sort -k2n
sort -k 0 people
echo "rc $?"
sort missing
echo "rc $?"
