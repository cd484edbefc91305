# Block devices: /dev/vda (a fresh zeroed disk attached by the test) and
# /dev/zero; dd and cmp with 64 KiB blocks (one request each); partial
# blocks refused with EINVAL.
ls -l /dev/vda /dev/zero
echo hello world > a
cat a a a a a a a a > b
cat b b b b b b b b > c
cat c c c c c c c c > d
cat d d d d d d d d > e
cat e e e e e e e e > f
wc -c f
dd if=f of=/dev/vda bs=64k status=noxfer
dd if=/dev/vda of=g bs=64k count=6 status=noxfer
cmp f g
echo same status $?
dd if=/dev/vda of=h bs=64k skip=2 count=3 status=noxfer
dd if=f of=i bs=64k skip=2 count=3 status=noxfer
cmp h i
echo middle status $?
cmp /dev/vda f
echo longer status $?
dd if=a of=/dev/vda bs=100 count=1 status=noxfer
echo partial status $?
dd if=/dev/zero of=/dev/vda bs=32k count=4 seek=1 status=noxfer
dd if=/dev/vda of=j bs=32k count=6 status=noxfer
dd if=/dev/zero of=k bs=32k count=4 status=noxfer
dd if=j of=l bs=32k skip=1 count=4 status=noxfer
cmp k l
echo zeros status $?
dd if=/dev/vda of=m bs=64k count=1 skip=5 status=noxfer
dd if=f of=n bs=64k count=1 skip=5 status=noxfer
cmp m n
echo untouched status $?
