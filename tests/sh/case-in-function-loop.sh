# case inside a loop inside a function, with break
classify() {
  for a; do
    case $a in
      stop) break ;;
      [0-9]*) echo "$a is a number" ;;
      *) echo "$a is a word" ;;
    esac
  done
}
classify 12 abc stop never
