# . runs a file in the current shell
cat > lib.sh <<'EOF'
greet() { echo "hello, $1"; }
libvar=set
EOF
. ./lib.sh
greet world
echo "libvar=$libvar"
cat > ret.sh <<'EOF'
echo in ret
return 4
echo never
EOF
. ./ret.sh
echo "status $?"
