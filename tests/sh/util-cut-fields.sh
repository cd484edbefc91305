# cut -f with -d and -s
printf 'a:b:c:d\none:two\nnodelim\n' > f
cut -d: -f2 f
cut -d: -f1,3 f
cut -d : -f 2- f
cut -d: -f3,1 f
cut -d: -s -f1 f
printf 'x\ty\tz\n' | cut -f2
cut -d: -f-2 f
