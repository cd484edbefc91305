# reversing words and lines
rev_words() {
  out=
  for w; do out="$w${out:+ $out}"; done
  echo "$out"
}
rev_words one two three four
lines=
while read l; do lines="$l
$lines"; done <<EOF
first
second
third
EOF
printf '%s' "$lines"
