# trap with no operands lists the traps; - and a lone number reset them
trap 'echo a' EXIT
trap '' HUP
trap 'echo usr' USR1
trap
echo ---
trap - USR1
trap 0
trap
echo ---
trap - HUP
trap
echo done
