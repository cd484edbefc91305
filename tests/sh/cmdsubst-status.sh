# the status of an assignment with a substitution
x=$(false); echo $?
x=$(true); echo $?
x=$(exit 7); echo $?
