# head and tail: lines, bytes, +N, -N, several files
printf '1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n' > n
printf 'a\nb\nc' > nonl
head n
head -n 3 n
head -3 n
head -c 5 n
head -n -9 n
head -n 2 n nonl
echo "rc $?"
tail n
tail -n 2 n
tail -2 n
tail -n +11 n
tail -c 4 n
tail -c +25 n
tail -n 1 nonl; echo
tail -n 2 n nonl; echo
printf 'x\ny\nz\n' | head -n 1
printf 'x\ny\nz\n' | tail -n 1
head -n 0 n
echo "rc $?"
