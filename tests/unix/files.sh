# Files: cp, mv, rm, cat, echo, wc and sha256sum on small files.
echo alpha > a
echo -n beta > b
cat a b
echo
cp a c
cat c
cp a b d
echo cp into a file status $?
mkdir dir
cp a b dir
ls dir
mv c dir/moved
ls
mv dir renamed
ls renamed
cat renamed/moved
wc a b
wc -l a
wc -w renamed/moved
sha256sum a b
echo -n "" | sha256sum
rm a
cat a
rm a
echo rm missing status $?
rm renamed
echo rm directory status $?
rm renamed/a renamed/b renamed/moved
rmdir renamed
ls
cat /etc/unix.files.sh | wc -l
