# a here-document in a function body, and to a function
show() {
  cat <<EOF
args: $*
EOF
}
show a b
count() { n=0; while read l; do n=$((n+1)); done; echo "$n lines"; }
count <<EOF
1
2
3
EOF
