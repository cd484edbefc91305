# <<- strips leading tabs
if true; then
	cat <<-EOF
		indented
	EOF
fi
echo after
