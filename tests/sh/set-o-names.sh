# options by name and $-
set -o errexit
echo "[$-]"
set -o nounset
echo "[$-]"
set +o errexit +o nounset
echo "[$-]"
set -f -C
echo "[$-]"
set +fC
echo "[$-]"
