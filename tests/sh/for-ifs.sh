# for splits unquoted expansions at IFS
list="a b  c"
for x in $list; do printf '[%s]' "$x"; done; echo
for x in "$list"; do printf '[%s]' "$x"; done; echo
IFS=,
csv="1,2,,3"
for x in $csv; do printf '[%s]' "$x"; done; echo
unset IFS
for x in $list; do printf '[%s]' "$x"; done; echo
