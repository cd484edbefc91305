# empty here-documents and ones ending the script
cat <<EOF
EOF
echo "after empty"
cat <<'EOF'

EOF
echo "after blank line"
cat <<EOF
last
EOF
