# two here-documents on one line
cat <<A; cat <<B
from a
A
from b
B
