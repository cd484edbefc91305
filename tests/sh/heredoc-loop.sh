# a here-document feeding a loop, fields split at IFS
while IFS=: read user id shell; do
  echo "$user has id $id and uses $shell"
done <<EOF
root:0:/bin/sh
alice:1000:/bin/dash
bob:1001:/bin/false
EOF
