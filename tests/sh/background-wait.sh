# background jobs and wait
(exit 3) &
wait $!
echo "status $?"
echo bg > file &
wait
cat file
sleep 0 &
pid=$!
wait $pid
echo "sleep done $?"
