# tr -d, -s, -c and their mixes
echo 'education' | tr -d aeiou
echo 'a   b    c' | tr -s ' '
echo 'aabbccdd' | tr -s a-z
echo 'phone: 555-1234!' | tr -cd '0-9\n'
echo 'one, two;  three' | tr -cs '[:alnum:]' '\n'
echo 'AAbbCC' | tr -s 'A-Z' 'a-z'
echo 'hello world' | tr -ds lo ' '
echo 'x' | tr
echo "rc $?"
echo 'x' | tr -d a b
echo "rc $?"
echo 'x' | tr z-a b
echo "rc $?"
