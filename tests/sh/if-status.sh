# the status of if: the body's, or 0 when nothing ran
if false; then :; fi; echo "none ran: $?"
if true; then (exit 4); fi; echo "body: $?"
if (exit 3); then :; else echo "else sees $?"; fi
