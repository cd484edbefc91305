# trap '' ignores a signal; trap - restores the default
trap '' TERM
kill -TERM $$
echo still alive
trap '' USR2
kill -USR2 $$
echo alive again
trap
