# each pipeline stage runs in a subshell
v=before
echo after | read v
echo "v=$v"
echo data | { read w; echo "inside: $w"; }
echo "outside: ${w-unset}"
n=0
printf '1\n2\n3\n' | while read l; do n=$((n + l)); done
echo "n=$n"
