# a syntax error ends a script with status 2
echo before
if true; then
  echo inside
fi fi
echo never
