# getopts over given arguments, then the end
while getopts n: o -n 1 -n2 rest; do echo "$o=$OPTARG"; done
echo "end status $? OPTIND=$OPTIND"
