# an unknown command gives 127
no_such_command_here
echo "status $?"
