# Directories: cd, pwd, mkdir, rmdir, ls, relative paths.
pwd
mkdir d
mkdir d/e d/f
cd d
pwd
ls
cd e
pwd
cd ..
pwd
cd ../d/./f
pwd
cd /
pwd
cd /tmp/unix.dirs
echo hello > d/e/file
ls d/e
ls -a d/f
ls -l d/e
ls d/e/file d/f
rmdir d/f
rmdir d/e
echo rmdir nonempty status $?
ls d
cd nowhere
echo cd status $?
pwd
mkdir d
echo mkdir exists status $?
rmdir d/e/file
echo rmdir file status $?
ls missing
echo ls status $?
