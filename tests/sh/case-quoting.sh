# quoted patterns are literal
s='*'
case $s in "*") echo star literal;; esac
case abc in 'a*') echo no;; a*) echo glob;; esac
p='[ab]*'
case bcd in $p) echo from variable;; esac
case x in (x) echo open paren;; esac
case '' in '') echo empty;; esac
