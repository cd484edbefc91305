# ${#} and ${#@}-like forms
set -- a bb ccc
echo ${#} ${#1} ${#2}
x=hello
echo ${#x}
unset u
echo "[${#u}]"
