# { } groups share the shell; redirect as a whole
{ echo one; echo two; } > g.txt
cat g.txt
x=1; { x=2; }; echo $x
{ echo a; echo b; } | cat
