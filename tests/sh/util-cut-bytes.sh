# cut -b and -c, and the usage errors
printf 'abcdef\nxy\n' > f
cut -b 2-4 f
cut -c 1,3,5 f
cut -c 4- f
cut -b -2 f
cut f
echo "rc $?"
cut -f 0 f
echo "rc $?"
cut -b 3-1 f
echo "rc $?"
cut -c 1 missing
echo "rc $?"
