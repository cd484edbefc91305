# a trap set in a function stays after it returns
setup() {
  trap 'echo "bye from $name"' EXIT
}
name=script
setup
echo main
name=changed
