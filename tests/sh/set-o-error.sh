# an unknown option name is an error that ends the script
echo before
set -o nosuchoption
echo never
