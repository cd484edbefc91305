# command -v says how a name would be run
command -v echo
command -v if
command -v cd
f() { :; }
command -v f
command -v nosuch
echo "status $?"
if command -v ls >/dev/null; then echo ls found; fi
command -v nosuch >/dev/null || echo nosuch missing
