# no match leaves the word as written; quoted characters never match
: > file.txt
echo *.nomatch
echo "*.txt" '*.txt' \*.txt
echo *.txt
set -f
echo *.txt
set +f
x='*.txt'
echo $x "$x"
