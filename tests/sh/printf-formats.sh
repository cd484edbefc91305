# printf's conversions, widths and flags
printf '[%5s][%-5s][%.2s]\n' ab ab abcdef
printf '[%05d][%-5d][%+d][% d]\n' 42 42 42 42
printf '[%x][%X][%o][%#x][%#o]\n' 255 255 8 255 8
printf '[%c][%c]\n' hello x
printf '[%b]\n' 'tab\there' 'nl\nhere'
printf '%s-%s\n' a b c d e
printf '%d%%\n' 50
printf '[%*d]\n' 6 7
printf "%d\n" "'A"
printf '%s\n'
