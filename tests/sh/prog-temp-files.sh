# making files and finding them with globs
mkdir work
for i in 3 1 2; do echo "file $i" > work/f$i.txt; done
echo other > work/notes.md
for f in work/*.txt; do
  read content < "$f"
  echo "$f: $content"
done
set -- work/*
echo "$# files"
rm work/f2.txt
echo work/f*.txt
rm work/*
echo work/*
