# a case-driven argument parser
parse() {
  verbose=0; out=; files=
  while [ $# -gt 0 ]; do
    case $1 in
      -v|--verbose) verbose=$((verbose+1)) ;;
      -o) shift; out=$1 ;;
      -o*) out=${1#-o} ;;
      --) shift; break ;;
      -*) echo "unknown option $1"; return 2 ;;
      *) files="$files $1" ;;
    esac
    shift
  done
  echo "verbose=$verbose out=$out files=$files rest=$*"
}
parse -v a -o x.out b -v
parse -ofile -- -v c
parse -q; echo "status $?"
