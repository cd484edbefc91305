# a first-in first-out queue in positional parameters
set --
enqueue() { queue="$queue $1"; }
dequeue() { set -- $queue; head=$1; shift; queue="$*"; }
queue=
for job in build test deploy; do enqueue $job; done
while [ -n "$queue" ]; do
  dequeue
  echo "running $head (left: ${queue:-nothing})"
done
