# ${x=w} ${x:=w}
unset a; b=
echo ${a=first} ${b:=second}
echo $a $b
