# a loop as a pipeline stage, and its output piped on
for i in 3 1 2; do echo $i; done | while read n; do echo "n=$n"; done
i=0; while [ $i -lt 3 ]; do echo line$i; i=$((i+1)); done | cat
