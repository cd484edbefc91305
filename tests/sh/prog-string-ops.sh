# file name surgery with parameter expansion
for path in /usr/lib/libc.so.6 archive.tar.gz ./dir/file noext /trailing/; do
  base=${path##*/}
  dir=${path%/*}
  [ "$dir" = "$path" ] && dir=.
  ext=${base#*.}
  [ "$ext" = "$base" ] && ext=none
  stem=${base%%.*}
  echo "$path: dir=$dir base=$base stem=$stem ext=$ext len=${#path}"
done
