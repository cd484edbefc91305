# Debian's busybox-static, unmodified: its sh runs the issue's commands on
# files made here; the host's run of the same busybox on the same script
# is the expected output.
bb=busybox
$bb mkdir -p a/b/c
$bb printf 'pear\napple\nfig\napple\nbanana\n' > a/fruit.txt
$bb printf 'one two three\nfour five\n' > a/b/words.txt
$bb cat a/fruit.txt
$bb sort a/fruit.txt | $bb uniq -c
$bb sort -r a/fruit.txt | $bb head -n 2
$bb tail -n 2 a/fruit.txt
$bb wc -l a/fruit.txt
$bb wc -w < a/b/words.txt
$bb grep -n apple a/fruit.txt
$bb sed 's/apple/APPLE/g' a/fruit.txt | $bb tr 'a-z' 'A-Z'
$bb awk '{ n += NF } END { print "words:", n }' a/b/words.txt
$bb cut -d ' ' -f 2 a/b/words.txt
$bb cp a/fruit.txt a/b/c/copy.txt
$bb mv a/b/c/copy.txt a/b/c/moved.txt
$bb find a -type f | $bb sort
$bb ls a/b/c
# ls -l: mode, size and name (owners, link counts and times differ by system).
$bb ls -l a/fruit.txt a/b/words.txt | $bb awk '{ print $1, $5, $NF }'
$bb md5sum a/fruit.txt
$bb sha256sum a/b/words.txt
$bb od -c a/b/words.txt | $bb head -n 2
$bb expr 6 \* 7
$bb test -d a/b && echo "a/b is a directory"
[ -f a/fruit.txt ] && echo "test builtin works"
$bb printf '%05d|%s\n' 42 text
echo $(( 3 + 4 * 5 ))
x=$($bb echo substituted); echo "command substitution: $x"
$bb cat <<END
here-document line 1
here-document with $x
END
$bb echo a b c | $bb xargs -n 1 $bb echo item
$bb rm a/b/c/moved.txt
$bb rmdir a/b/c
$bb ls a/b
# tar c | tar x, gzip and gunzip.
$bb printf 'hello\n' > a/b/h.txt
$bb tar cf - a | $bb tar tf - | $bb sort
$bb mkdir x
$bb tar cf - a | (cd x && $bb tar xf -)
$bb cat x/a/b/h.txt x/a/b/words.txt | $bb md5sum
$bb gzip -c a/fruit.txt > f.gz
$bb gunzip -c f.gz | $bb sha256sum
$bb gzip a/b/h.txt; $bb ls -1 a/b; $bb gunzip a/b/h.txt.gz; $bb cat a/b/h.txt
# date: a fixed time, and this year's shape (not its value).
$bb date -u -d @0 '+%Y-%m-%d %H:%M:%S %a'
$bb date -u -d @1700000000
$bb date +%Y | $bb wc -c
# sleep, kill, background jobs and wait.
$bb sleep 0.1; echo "slept"
$bb sleep 30 & p=$!; kill $p; wait $p; echo "killed sleep: $?"
$bb sleep 0.2 & q=$!; wait $q; echo "waited for a job: $?"
(exit 3) & wait $!; echo "background subshell: $?"
# Traps: a signal from itself, from another process while waiting, EXIT.
trap 'echo "trapped USR1"' USR1
kill -USR1 $$; echo "after kill -USR1"
trap 'echo "trapped USR2"' USR2
($bb sleep 0.1; kill -USR2 $$) &
wait; echo "after wait"
trap - USR1 USR2
trap 'echo "EXIT trap runs"' EXIT
echo "done"
