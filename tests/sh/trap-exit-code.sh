# exit inside an EXIT trap sets the script's status
trap 'echo cleanup; exit 7' EXIT
echo start
exit 3
