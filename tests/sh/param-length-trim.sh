# ${#x} and the four trims
path=/usr/local/lib/libfoo.so.1
echo ${#path}
echo ${path%.*}
echo ${path%%.*}
echo ${path#*/}
echo ${path##*/}
f=archive.tar.gz
echo ${f%.gz} ${f%.*.*} ${f#*.}
