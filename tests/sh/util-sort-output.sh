# sort -o writes its output to a file, which may be an input
LC_ALL=C
export LC_ALL
printf '3\n1\n2\n' > f
sort -o f f
cat f
sort -n -o out f
cat out
sort -s -k1,1 <<END
b 2
a 1
b 1
a 2
END
