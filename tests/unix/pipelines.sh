# Pipelines: a 4 MiB file (65 bytes doubled 16 times) through pipes of
# several stages, checked with wc and sha256sum against the file itself.
echo 0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_ > a
cat a a > b; cat b b > a
cat a a > b; cat b b > a
cat a a > b; cat b b > a
cat a a > b; cat b b > a
cat a a > b; cat b b > a
cat a a > b; cat b b > a
cat a a > b; cat b b > a
cat a a > b; cat b b > big
rm a b
wc -c big
cat big | wc -c
cat big | wc -l
cat big | cat | cat | cat | sha256sum
sha256sum big
sha256sum < big
cat < big | cat | wc -w
echo one two three | wc -w
echo pipeline status is the last command status
true | false
echo $?
false | true
echo $?
! true | true
echo $?
