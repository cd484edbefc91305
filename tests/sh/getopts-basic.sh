# getopts walks the options
parse() {
  OPTIND=1
  while getopts ab:c opt; do
    case $opt in
      a) echo "flag a" ;;
      b) echo "b with $OPTARG" ;;
      c) echo "flag c" ;;
      ?) echo "bad option" ;;
    esac
  done
  shift $((OPTIND - 1))
  echo "operands: $*"
}
parse -a -b value file1 file2
parse -ca -bX -- -notanoption
parse -x 2>/dev/null
parse plain
