# set -e ends the script; the EXIT trap still runs
set -e
trap 'echo cleanup $?' EXIT
echo one
false
echo never
