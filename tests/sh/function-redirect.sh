# a function's output redirected where it is called and where defined
f() { echo from f; }
f > out1; cat out1
g() { echo from g; } > out2
g; cat out2
