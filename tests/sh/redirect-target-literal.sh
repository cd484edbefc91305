# a redirection target is not split or globbed
name="a b"
echo hi > $name
cat "a b"
touchme=x
echo one > g1
pat='g*'
echo two >> $pat
cat 'g*'
cat g1
