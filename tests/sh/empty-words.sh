# empty expansions vanish, quoted empties stay
e=
set -- $e "" "$e" $e
echo $#
for w in $e; do echo never; done
args() { echo $#; }
args $e$e
args "$e$e"
args ${e:-}
args "${e:-}"
