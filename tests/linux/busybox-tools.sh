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
echo "done"
