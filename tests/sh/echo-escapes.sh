# echo interprets backslash escapes, as dash does
echo 'a\tb'
echo 'line\nbreak'
echo 'stop\chere'
echo -n 'no newline'
echo
echo '\0101'
echo -e 'x'
