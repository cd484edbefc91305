# case with classes, ranges, alternatives and quoting
classify() {
  case $1 in
    '') echo empty ;;
    [[:digit:]]|[[:digit:]][[:digit:]]) echo "small number" ;;
    *[!0-9]*) echo "not a number" ;;
    *) echo "big number" ;;
  esac
}
for v in 7 42 123 x1 ''; do classify "$v"; done
case "a|b" in a\|b) echo "escaped bar" ;; esac
case ab in "a"*) echo "quoted prefix" ;; esac
