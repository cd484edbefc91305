# set -u allows ${x-default} and $@
set -u
echo "${unset_one-default}" "${unset_one:-also}"
echo "args: $@ $#"
x=1
echo "x=$x"
echo "$never_set"
echo unreachable
