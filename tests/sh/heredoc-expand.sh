# an unquoted delimiter expands $, ` and \ in the body
name=world
n=3
cat <<EOF
hello $name
sum $((n + 4))
cmd $(echo sub)
escaped \$name and \\ backslash
tab	kept
EOF
cat <<"EOF"
quoted $name $((1+1))
EOF
cat <<\EOF
backslashed $name
EOF
