# date: the calendar clock agrees with the host's year; fixed dates
date +%Y
date -u -d @0
date -u -d @0 '+%Y-%m-%d %H:%M:%S %a %b %j'
date -u -d @1795604143
date -u -d @951825600 +%F%t%T%n%A%B%y%e%I%p%u%w%s
date -d @86399 '+%D %R %r %%'
date -d 'not a date'
echo "rc $?"
date foo
echo "rc $?"
