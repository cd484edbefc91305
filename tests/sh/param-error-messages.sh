# ${x:?} ends the script with status 2
x=
echo "${x:-empty}"
echo "${x?set but empty is fine}"
echo "${x:?is empty}"
echo never
