# division by zero is an error that ends the script
echo $((1 / 0))
echo never
