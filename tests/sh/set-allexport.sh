# set -a exports every variable assigned
set -a
A=exported
set +a
B=not
sh -c 'echo "A=$A B=$B"'
