# pathname expansion: sorted, no match left as written
for f in b.txt a.txt c.log .hidden; do : > $f; done
mkdir sub; : > sub/x.txt
echo *.txt
echo *
echo ?.log
echo [ab].txt
echo *.none
echo sub/*
echo */*.txt
echo .h*
echo '*'.txt "*"
