# set -o prints the option table, set +o the commands
set -o
set +o
set -o noglob -o nounset
set -o | while read name value; do if [ "$value" = on ]; then echo "on: $name"; fi; done
saved=$(set +o)
set +o noglob +o nounset
echo "[$-]"
eval "$saved"
echo "[$-]"
