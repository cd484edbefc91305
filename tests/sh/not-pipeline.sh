# ! inverts a pipeline's status
! true; echo $?
! false; echo $?
if ! false | true; then echo no; else echo inverted; fi
