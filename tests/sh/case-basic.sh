# case with globs, alternatives and a default
for f in main.c README notes.txt Makefile x; do
  case $f in
    *.c) echo "$f: C source" ;;
    *.txt|README) echo "$f: text" ;;
    [A-Z]*) echo "$f: capitalised" ;;
    ?) echo "$f: one letter" ;;
    *) echo "$f: other" ;;
  esac
done
