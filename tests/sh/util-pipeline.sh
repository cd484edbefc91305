# a word-frequency pipeline of the utilities together
LC_ALL=C
export LC_ALL
cat > text <<END
the quick brown fox
jumps over the lazy dog
The dog sleeps; the fox runs.
END
tr -cs '[:alpha:]' '\n' < text | tr A-Z a-z | grep -v '^$' | sort | uniq -c | sort -k1,1nr -k2 | head -n 4
cut -d' ' -f1 text | sort -u
grep -c the text
seq 1 10 | grep '[13579]$' | xargs | tr ' ' +
