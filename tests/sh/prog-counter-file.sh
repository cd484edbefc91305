# a counter kept in a file across runs of a function
bump() {
  if [ -f counter ]; then read n < counter; else n=0; fi
  n=$((n + 1))
  echo $n > counter
}
bump; bump; bump
cat counter
rm counter
bump
cat counter
