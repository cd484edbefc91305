# return in a . script ends that script only
cat > part.sh <<'EOF'
echo part one
return 5
echo never
EOF
. ./part.sh
echo "status $?"
