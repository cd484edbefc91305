# here-documents inside $(...) and backquotes
x=$(cat <<EOF
line one
line two
EOF
)
echo "$x"
y=`cat <<EOF
backquoted
EOF
`
echo "$y"
z="$(cat <<'EOF'
$literal `text`
EOF
)"
echo "$z"
