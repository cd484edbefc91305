# ! inverts a pipeline's status
! true
echo "! true: $?"
! false
echo "! false: $?"
! echo hi | read x
echo "! pipeline: $?"
if ! [ -e nosuch ]; then echo "absent"; fi
