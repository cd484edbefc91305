# towers of Hanoi, recursively
moves=0
hanoi() {
  if [ $1 -eq 0 ]; then return; fi
  hanoi $(($1 - 1)) $2 $4 $3
  moves=$((moves + 1))
  echo "move disk $1 from $2 to $3"
  hanoi $(($1 - 1)) $4 $3 $2
}
hanoi 3 A C B
echo "$moves moves"
