# grep: basic regular expressions, -n -c -v -i -x, exit statuses
printf 'apple\nbanana\ncherry\nApple pie\ndate\n' > fruit
grep an fruit
grep -n '^[a-c]' fruit
grep -c a fruit
grep -v a fruit
grep -i apple fruit
grep -x date fruit
grep 'e$' fruit
grep 'p\{2\}' fruit
grep 'a.a' fruit
grep '\(an\)*a$' fruit
grep 'pie\|date' fruit
grep zebra fruit
echo "rc $?"
grep -q banana fruit
echo "rc $?"
grep -q zebra fruit
echo "rc $?"
grep 'a+' fruit
echo "rc $?"
grep '[[:upper:]]' fruit
grep '*' fruit
echo "rc $?"
