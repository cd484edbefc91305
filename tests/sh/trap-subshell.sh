# a subshell runs its own EXIT trap; the parent's is not run by $(...)
trap 'echo parent done' EXIT
(trap 'echo sub done' EXIT; echo in sub)
x=$(echo captured)
echo "$x"
echo end
