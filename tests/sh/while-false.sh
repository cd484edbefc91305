# a loop that never runs has status 0
false
while false; do echo never; done
echo "status $?"
