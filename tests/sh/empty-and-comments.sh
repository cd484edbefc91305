# comments and blank lines everywhere

# a comment line
echo a   # trailing comment
if true  # comment after condition
then     # comment after then
  echo b
fi       # done
