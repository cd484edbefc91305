# nested parameter expansions
unset a b
echo "${a:-${b:-deep default}}"
b=bee
echo "${a:-${b:-deep default}}"
echo "${a:-"quoted $b"}"
x=value
echo "${x:+alt ${x}}" "${nothing:+never}"
echo "${#x}${x%e}"
n=5
echo "${x:-$((n * 2))}" "${unset:-$((n * 2))}"
