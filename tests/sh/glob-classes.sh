# bracket expressions and character classes in globs
for f in a1 b2 c3 Ab d_ 9z; do : > $f; done
echo [ab]*
echo [!ab]*
echo [a-c][0-9]
echo [[:upper:]]*
echo [[:digit:]]*
echo *[[:punct:]]*
echo ?[[:alpha:]]
