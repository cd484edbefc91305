# cmp: identical, different, one a prefix of the other, -s
printf 'abc\ndef\n' > a
printf 'abc\ndef\n' > b
printf 'abc\ndxf\n' > c
printf 'abc\n' > d
cmp a b
echo "rc $?"
cmp a c
echo "rc $?"
cmp -s a c
echo "rc $?"
cmp a d 2>/dev/null
echo "rc $?"
cmp a missing 2>/dev/null
echo "rc $?"
cmp -l a c
echo "rc $?"
printf 'abcdefghijkl\n' > e
printf 'abXdefghijkY\n' > g
cmp -l e g
echo "rc $?"
cmp -l a d 2>/dev/null
echo "rc $?"
cmp -l a b
echo "rc $?"
