# grep -E, -F, -e: extended expressions, fixed strings, several patterns
printf 'a+b\nab\naab\nb\n(x)\nx.y\nxzy\n' > t
grep -E 'a+b' t
grep -E '^(a|b)$' t
grep -E 'a{2}' t
grep -E 'x.y' t
grep -F 'x.y' t
grep -F 'a+b' t
grep 'a+b' t
grep -e ab -e '(x)' t
grep -E -e '^b' -e 'y$' t
grep -E '\(x\)' t
grep -cE 'a?b' t
grep -E 'a|' t | head -n 2
