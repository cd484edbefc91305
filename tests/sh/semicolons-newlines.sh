# the same script on one line and on many
for i in 1 2; do if [ $i = 1 ]; then echo one; else echo other; fi; done
for i in 1 2
do
  if [ $i = 1 ]
  then
    echo one
  else
    echo other
  fi
done
