# dd and cmp on regular files: blocks, partial records, count, skip, seek,
# conv=notrunc, the summary, and their errors and exit statuses.
echo hello world, this is a test of dd > a
dd if=a of=b bs=8 status=noxfer
cmp a b
echo same status $?
dd if=a of=b bs=8 2> summary
wc -l summary
dd if=a of=c bs=4 count=2 status=noxfer
cat c
echo
dd if=a of=c bs=4 skip=1 seek=1 count=2 conv=notrunc status=noxfer
cat c
echo
cmp a c
echo prefix status $?
cmp -s a c
echo silent status $?
dd if=a of=d bs=2 seek=3 status=none
cmp a d
echo differ status $?
wc -c d
dd if=a of=big bs=1k seek=63 status=noxfer
wc -c big
dd if=big of=big2 bs=32k status=noxfer
cmp big big2
sha256sum big big2
cat a | dd of=piped bs=5 skip=1 count=2 status=noxfer
cat piped
echo
dd if=/dev/null of=empty status=noxfer
cmp empty a
dd if=a skip=9 status=noxfer
dd if=a of=e bs=0
echo bs status $?
dd if=a of=e bs=4q
dd if=a conv=sync
dd if=a iflag=direct
dd if=a status=progress
dd if=nowhere of=e
echo missing status $?
cmp a nowhere
echo trouble status $?
cmp -s a nowhere
echo silent trouble status $?
cat a | cmp a
echo stdin status $?
cmp c - < a
echo stdin prefix status $?
cmp -x a b
echo option status $?
