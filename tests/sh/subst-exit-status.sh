# the status of a command substitution
x=$(false)
echo "assign $?"
x=$(exit 5)
echo "assign $?"
echo "$(exit 3)" >/dev/null
echo "echo $?"
y=$(true) z=$(false)
echo "two $?"
