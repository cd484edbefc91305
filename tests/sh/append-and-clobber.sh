# > truncates, >> appends
echo one > f; echo two >> f; cat f
echo three > f; cat f
: > f; set -- $(wc -c < f); echo "size after :>: $1"
