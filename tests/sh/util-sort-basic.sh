# sort: plain, -r, -n, -u, -f
LC_ALL=C
export LC_ALL
printf 'pear\nApple\nbanana\napple\n\nCherry\nbanana\n' > w
sort w
sort -r w
sort -u w
sort -f w
printf '10\n9\n-3\n2.5\n100\nx\n0\n' > n
sort -n n
sort -rn n
sort -nu n
printf 'b\na' | sort
sort w n | head -n 3
