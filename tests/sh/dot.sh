# . runs a file in the current shell
cat > lib.sh <<'EOF'
LIBVAR=loaded
libfn() { echo "libfn $1"; }
EOF
. ./lib.sh
echo $LIBVAR
libfn arg
