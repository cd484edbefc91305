# here-documents feeding pipelines
cat <<EOF | while read a b; do echo "$b $a"; done
1 one
2 two
3 three
EOF
cat <<EOF | wc -l | { read n; echo "lines: $n"; }
a
b
c
d
EOF
