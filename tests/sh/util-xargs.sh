# xargs: batching, -n, -I, quoting, exit statuses
printf 'a b\nc d e\n' | xargs
printf 'a b\nc d e\n' | xargs -n 2
printf 'a b\nc d e\n' | xargs echo args:
printf "'one two' three\n" | xargs -n 1
printf 'x\ny\n' | xargs -I % echo [%] [%]
printf 'f1\nf2\n' | xargs touch
[ -f f1 ] && [ -f f2 ] && echo touched
printf 'a\n' | xargs false
echo "rc $?"
printf '' | xargs echo empty
printf '' | xargs -r echo never
echo "rc $?"
printf 'a\n' | xargs no-such-command-xyz
echo "rc $?"
printf "'unclosed\n" | xargs echo
echo "rc $?"
printf 'a b c\n' | xargs -n 0 echo
echo "rc $?"
