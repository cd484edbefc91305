# redirections on loops and ifs
for i in 1 2 3; do echo $i; done > nums
while read n; do echo "read $n"; done < nums
if true; then echo into-file; fi > f.txt
cat f.txt
{ echo err-line >&2; echo out-line; } 2>/dev/null
