# . of a missing file ends the script with status 2
echo before
. ./no_such_file
echo never
