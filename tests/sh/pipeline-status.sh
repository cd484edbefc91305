# a pipeline's status is the last command's
false | true; echo $?
true | false; echo $?
echo x | { read v; echo "read $v"; }
v=1; echo 2 | read v; echo "v still $v"
