# Running commands: not found (127), not executable (126), PATH, sh -c,
# sh with a script and arguments, and every remaining utility once.
nosuchcommand
echo not found status $?
/bin/nosuchcommand arg
echo full path not found status $?
echo echo from a script > script
./script
echo not executable status $?
sh script
echo script status $?
sh missing-script
echo missing script status $?
echo 'echo args $# $1 $2' > args.sh
sh args.sh first "second word"
sh -c 'echo in sh -c $0 $1' zero one
PATH=/nowhere ls
echo empty path status $?
PATH=/bin true
echo bin path status $?
true
echo true $?
false
echo false $?
sleep 0.1
echo sleep status $?
sleep
echo sleep without operand status $?
/bin/pwd > here
cat here
ps > /dev/null
echo ps status $?
kinfo > /dev/null
echo kinfo status $?
kill -9 999999
echo kill missing status $?
kill
echo kill usage status $?
sh -c 'time true' 2> timing
wc -l -w < timing
sh -c "time sh -c 'exit 4'" 2> /dev/null
echo timed status $?
