# unset of a read-only variable ends the script
readonly K=1
unset K
echo never
