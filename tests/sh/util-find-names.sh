# find: -name patterns and -type over a small tree (sorted: directory order differs)
LC_ALL=C
export LC_ALL
mkdir -p top/sub/deep top/other
echo x > top/a.txt
echo x > top/b.log
echo x > top/sub/c.txt
echo x > top/sub/deep/d.txt
find top | sort
find top -name '*.txt' | sort
find top -type d | sort
find top -type f -name '[ab]*' | sort
find top ! -name '*.txt' -type f | sort
find top/sub -name 'c*' -print
