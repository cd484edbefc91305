# exit statuses wrap at 256; not found is 127
(exit 256); echo $?
(exit 257); echo $?
(exit 255); echo $?
nosuch_command_here 2>/dev/null; echo $?
sh -c 'exit 42'; echo $?
