# for without in: the positional parameters
set -- one "two words" three
for a; do echo "<$a>"; done
for a do echo "again $a"; done
