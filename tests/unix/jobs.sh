# Background jobs with & and wait; $! and the status of a waited job.
echo one > a &
echo two > b &
wait
cat a b
sh -c 'exit 5' &
wait $!
echo waited status $?
sleep 100 &
kill $!
wait $!
echo killed job status $?
sleep 0.2 & sleep 0.1 &
wait
echo both sleeps done
cat a | wc -c > count &
wait
cat count
wait
echo wait with no jobs $?
