# a builtin whose output fails says so and returns 1
pwd >&-
echo "pwd: $?"
echo x >&-
echo "echo: $?"
