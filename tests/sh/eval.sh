# eval runs its arguments as a script
cmd='echo evaluated'
eval $cmd
eval 'for i in 1 2; do echo loop $i; done'
var=name; eval "$var=value"; echo $name
