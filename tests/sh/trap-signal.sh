# a caught signal runs its trap after the command it arrived during
trap 'echo caught USR1' USR1
trap 'echo caught TERM; n=$((n+1))' TERM
n=0
kill -USR1 $$
echo after usr1
kill -TERM $$
kill -TERM $$
echo "n=$n"
