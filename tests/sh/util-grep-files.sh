# grep over several files: names, -l, -h, counts, missing files (status 2)
printf 'one\ntwo\n' > a
printf 'three\none more\n' > b
printf 'none\n' > c
grep one a b
grep -l one a b c
grep -c o a b c
grep -h one a b
grep -n one b
grep one a missing
echo "rc $?"
grep -s one missing
echo "rc $?"
grep -q one missing a
echo "rc $?"
printf 'from stdin\n' | grep stdin
printf 'from stdin\n' | grep -H stdin -
grep 'a\(' a
echo "rc $?"
grep -E 'a{1' a
echo "rc $?"
grep
echo "rc $?"
grep -E '(a' a
echo "rc $?"
grep -x
echo "rc $?"
