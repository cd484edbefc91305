# eval sees the positional parameters
set -- a b c
eval 'echo $# $2'
eval "last=\${$#}"
echo $last
