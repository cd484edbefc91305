# touch creates files and leaves contents alone; -c creates nothing
touch new
[ -f new ] && echo created
[ -s new ] || echo empty
echo data > old
touch old
cat old
touch -c absent
[ -e absent ] || echo not-created
touch one two
[ -f one ] && [ -f two ] && echo both
touch
echo "rc $?"
touch no-such-dir/f
echo "rc $?"
