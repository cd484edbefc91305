# primes below 60 by trial division
n=2
primes=
while [ $n -lt 60 ]; do
  d=2; prime=1
  while [ $((d * d)) -le $n ]; do
    if [ $((n % d)) -eq 0 ]; then prime=0; break; fi
    d=$((d + 1))
  done
  [ $prime -eq 1 ] && primes="$primes $n"
  n=$((n + 1))
done
echo "primes:$primes"
