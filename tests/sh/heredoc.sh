# here-documents
name=world
cat <<EOF
hello $name
sum $((2 + 3))
EOF
cat <<'EOF'
literal $name $((1+1))
EOF
cat <<"EOF"
also literal $name
EOF
