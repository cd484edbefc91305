# a leading dot is matched only explicitly
: > .hidden
: > visible
: > .other
echo *
echo .h*
echo .[!.]*
echo .*e*
