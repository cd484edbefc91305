# here-documents feeding pipelines and loops
cat <<EOF | while read a b; do echo "$b $a"; done
1 one
2 two
EOF
while read line; do echo "got: $line"; done <<EOF
x
y
EOF
