# fibonacci, recursive and iterative
fib() {
  if [ $1 -lt 2 ]; then echo $1; return; fi
  echo $(( $(fib $(($1 - 1))) + $(fib $(($1 - 2))) ))
}
for n in 0 1 2 5 7; do printf '%s ' "$(fib $n)"; done
echo
a=0 b=1 i=0
while [ $i -lt 20 ]; do t=$((a + b)); a=$b; b=$t; i=$((i + 1)); done
echo "fib(20)=$a"
