# printf reuses its format for extra arguments
printf '%s=%s\n' a 1 b 2 c
printf '<%s>' x y z
echo
printf '%s\n' "with space" 'tab	in'
printf -- '-%s-\n' dash
