# <<- strips leading tabs from the body and the delimiter line
if true; then
	cat <<-EOF
	indented
		twice
	EOF
fi
