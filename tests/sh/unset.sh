# unset variables and functions
x=1; unset x; echo "[${x-unset}]"
f() { echo f; }; unset -f f
f 2>/dev/null || echo "f is gone"
