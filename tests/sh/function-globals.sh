# POSIX functions share variables with the caller
set_it() { VALUE=set-in-function; }
set_it; echo $VALUE
count=0
bump() { count=$((count+1)); }
bump; bump; bump; echo $count
