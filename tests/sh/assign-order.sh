# assignments are done left to right
a=1 b=$a c=$b
echo $a $b $c
x=outer
f() { echo "x=$x"; }
x=inner f
echo "x=$x"
