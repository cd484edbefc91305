# type and command -V describe names
f() { :; }
type f
type if
type :
type echo
type set
command -V while
type nosuch
echo "status $?"
