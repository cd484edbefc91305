# case with empty patterns and star patterns in variables
x=
case $x in "") echo empty ;; *) echo other ;; esac
p='*'
case anything in $p) echo "star var matches" ;; esac
case anything in "$p") echo never ;; *) echo "quoted star var is literal" ;; esac
case "a b" in "a b") echo "spaces" ;; esac
case x in
  (x) echo "paren form"
esac
