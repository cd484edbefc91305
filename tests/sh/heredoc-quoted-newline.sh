# the body starts after the line's end, not a newline inside quotes
cat <<EOF; echo 'two
lines'
body
EOF
cat <<EOF && echo "$(cat <<INNER
inner
INNER
)"
outer
EOF
