# the first matching arm wins; the status is the arm's
for v in apple apricot banana cherry; do
  case $v in
    ap*) echo "$v: starts with ap" ;;
    a*) echo "$v: never" ;;
    *an*) echo "$v: has an" ;;
    *) echo "$v: other"; false ;;
  esac
  echo "  status $?"
done
case nothing in x) echo no ;; esac
echo "no match status $?"
