# $#, $*, $@ with IFS, and "$@" in functions
set -- "a b" c ""
echo "$#"
IFS=:
echo "$*"
unset IFS
count() { echo $#; }
count "$@"
count $@
count "$*"
count
