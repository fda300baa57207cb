#!/bin/sh
# haproxy run (and update): converge haproxy.cfg from the backends and ports
# lists, which arrive as compact JSON text.
case $0 in */*) . "${0%/*}/lib.sh" ;; *) . ./lib.sh ;; esac
solar_init

backends=$(printf '%s' "${SOLAR_INPUT_BACKENDS:-}" | solar_strings) ||
	solar_die "input backends must be a JSON list of strings, got '${SOLAR_INPUT_BACKENDS:-}'"

# ports is a JSON list of integers: no strings to unquote, so dropping the
# brackets and blanks leaves comma-separated numbers.
binds=
ports=$(printf '%s' "${SOLAR_INPUT_PORTS:-}" | tr -d '[] \t\r\n')
[ "$ports" != null ] || ports=
if [ -n "$ports" ]; then
	old_ifs=$IFS
	IFS=,
	set -f
	for p in $ports; do
		solar_port ports "$p" ''
		binds="$binds    bind *:$int$nl"
	done
	set +f
	IFS=$old_ifs
fi

servers=
names=' '
old_ifs=$IFS
IFS=$nl
set -f
for b in $backends; do
	name=${b%%:*}
	rest=${b#*:}
	host=${rest%:*}
	port=${rest##*:}
	if [ "$name" = "$b" ] || [ "$host" = "$rest" ] || [ -z "$name" ] || [ -z "$host" ]; then
		solar_die "input backends: element '$b' is not name:host:port"
	fi
	case $name$host in
	*[!0-9A-Za-z.:_-]*) solar_die "input backends: element '$b' has characters other than letters, digits and .:_-" ;;
	esac
	case $names in
	*" $name "*) solar_die "input backends: server name '$name' appears twice" ;;
	esac
	names="$names$name "
	solar_port backends "$port" ''
	servers="$servers    server $name $host:$int check$nl"
done
set +f
IFS=$old_ifs

frontend=
[ -z "$binds" ] || frontend="
frontend $SOLAR_RESOURCE
$binds    default_backend ${SOLAR_RESOURCE}_servers
"

solar_put "$work/haproxy.cfg" 0644 "# haproxy $SOLAR_RESOURCE, written by solar
global
    maxconn 4096

defaults
    mode tcp
    timeout connect 5s
    timeout client 30s
    timeout server 30s
$frontend
backend ${SOLAR_RESOURCE}_servers
    balance roundrobin
$servers" keys
solar_done
