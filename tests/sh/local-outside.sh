# local outside a function is an error that ends the script
echo before
local x=1
echo never
