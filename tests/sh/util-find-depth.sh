# find: -maxdepth, -mindepth, several paths, errors
LC_ALL=C
export LC_ALL
mkdir -p t/u/v
echo x > t/f
echo x > t/u/g
find t -maxdepth 1 | sort
find t -mindepth 2 | sort
find t -maxdepth 0
find t/u t/f | sort
find missing
echo "rc $?"
find t -bogus
echo "rc $?"
find t -type q
echo "rc $?"
