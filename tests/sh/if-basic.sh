# if / then / else / fi on one line and many
if true; then echo yes; fi
if false; then echo no; else echo else-branch; fi
if false
then
  echo BODY
fi
echo after
