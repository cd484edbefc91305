# env: a fresh environment, added and removed variables, exit statuses
env -i A=1 B='two words' env
env -i A=1 B=2 env -u A env
env -i X=1 X=2 env
env -i true
echo "rc $?"
env -i false
echo "rc $?"
env -i no-such-command-xyz
echo "rc $?"
env -z
echo "rc $?"
