# a last line without a newline is still read, with status 1
printf 'one\ntwo' > f
while read l; do echo "got $l"; done < f
echo "last: $l"
while read l || [ -n "$l" ]; do echo "loop $l"; done < f
