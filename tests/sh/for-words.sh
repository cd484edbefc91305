# for over words, globs-free
for w in alpha beta "gamma delta"; do echo "[$w]"; done
for i in 1 2; do echo $i; done
