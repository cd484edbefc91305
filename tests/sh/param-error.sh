# ${x?} ends a script with status 2
x=set
echo ${x?not reached}
echo ${nope?is not set}
echo never
