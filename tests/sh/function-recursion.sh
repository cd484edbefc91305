# a recursive function
fact() {
  if [ $1 -le 1 ]; then echo 1; return; fi
  echo $(( $1 * $(fact $(($1 - 1))) ))
}
fact 1; fact 5; fact 10
fib() { if [ $1 -lt 2 ]; then echo $1; else echo $(( $(fib $(($1-1))) + $(fib $(($1-2))) )); fi; }
fib 7
