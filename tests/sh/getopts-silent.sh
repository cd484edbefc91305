# a leading : in the option string: silent errors
set -- -z -b
while getopts :ab: opt; do
  case $opt in
    :) echo "missing argument for -$OPTARG" ;;
    \?) echo "unknown option -$OPTARG" ;;
    *) echo "option $opt" ;;
  esac
done
echo "OPTIND=$OPTIND"
