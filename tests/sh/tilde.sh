# tilde expansion
HOME=/home/someone
echo ~ ~/file "~" \~ ~notauser_hopefully/x
x=~/a
echo $x
echo a~b
