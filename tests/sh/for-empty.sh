# for over nothing runs no body and keeps the variable
v=keep
for v in; do echo never; done
echo $v
