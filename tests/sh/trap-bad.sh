# an unknown condition is an error (status 1), the script goes on
trap 'echo x' NOSUCHSIG
echo "status $?"
trap 'echo y' 99
echo "status $?"
trap
