# tee: to standard output and files; -a appends
echo first | tee a b
cat a b
echo second | tee -a a > /dev/null
cat a
printf 'x\ny\n' | tee c | cat
cat c
echo kept | tee no-such-dir/f
echo "rc $?"
