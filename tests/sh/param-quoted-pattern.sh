# quoted pattern characters in ${x#p} and ${x%p}
x='*star*'
echo "${x#\*}" "${x#"*"}" "${x#*}"
y='a.b.c'
echo "${y%.*}" "${y%%.*}" "${y#*.}" "${y##*.}"
p='*.'
echo "${y#$p}" "${y#"$p"}"
z='[a]b'
echo "${z#[a]}" "${z#\[a]}"
