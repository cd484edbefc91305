# no match: status 0; the match's status otherwise
case z in a) false;; esac; echo "nomatch $?"
case a in a) (exit 5);; esac; echo "match $?"
