# seq: counts up and down, increments, -s, -w, decimals, errors
seq 3
seq 2 5
seq 1 3 10
seq 5 -2 0
seq -s , 4
seq -s ' + ' 1 3
seq -w 8 11
seq -w 1 2 10
seq 0 0.25 1
seq 1 0.5 2.75
seq -2 0
seq 3 1
echo "rc $?"
seq 1 0 3
echo "rc $?"
seq x
echo "rc $?"
seq 1 1000000 | head -n 2
seq 1 1 1x
echo "rc $?"
