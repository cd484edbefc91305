# assigning a read-only variable ends the script with status 2
readonly R=fixed
echo "$R"
R=changed
echo never
