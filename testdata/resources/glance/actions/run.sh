#!/bin/sh
# glance run (and update): converge glance-api.conf.
case $0 in */*) . "${0%/*}/lib.sh" ;; *) . ./lib.sh ;; esac
solar_init

solar_port port "${SOLAR_INPUT_PORT:-}" 9292
port=$int
solar_port db_port "${SOLAR_INPUT_DB_PORT:-}" 3306
db_port=$int
db_host=${SOLAR_INPUT_DB_HOST:-127.0.0.1}
case $db_host in
*[!0-9A-Za-z.:_-]*) solar_die "input db_host must be a host name or address, got '$db_host'" ;;
esac
keystone_url=${SOLAR_INPUT_KEYSTONE_URL:-}
case $keystone_url in
'') solar_die "input keystone_url is empty: connect a keystone endpoint to it or set it" ;;
*[!0-9A-Za-z.:/_%?=\&+~-]*) solar_die "input keystone_url must be a URL, got '$keystone_url'" ;;
esac

solar_put "$work/glance-api.conf" 0644 "# glance $SOLAR_RESOURCE, written by solar
[DEFAULT]
bind_port = $port

[database]
connection = mysql://glance@$db_host:$db_port/glance

[keystone_authtoken]
www_authenticate_uri = $keystone_url
auth_url = $keystone_url
" keys
solar_done
