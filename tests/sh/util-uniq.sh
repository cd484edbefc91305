# uniq: runs of equal lines, -c, -d, -u, an output file
printf 'a\na\nb\nc\nc\nc\na\n' > f
uniq f
uniq -c f
uniq -d f
uniq -u f
uniq f out
cat out
printf 'x\nx' | uniq -c
uniq missing
echo "rc $?"
