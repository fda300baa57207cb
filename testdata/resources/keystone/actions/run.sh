#!/bin/sh
# keystone run (and update): converge keystone.conf. The database password goes
# into the file only, never to stdout or stderr.
case $0 in */*) . "${0%/*}/lib.sh" ;; *) . ./lib.sh ;; esac
solar_init

solar_port port "${SOLAR_INPUT_PORT:-}" 5000
port=$int
solar_port admin_port "${SOLAR_INPUT_ADMIN_PORT:-}" 35357
admin_port=$int
solar_port db_port "${SOLAR_INPUT_DB_PORT:-}" 3306
db_port=$int
db_host=${SOLAR_INPUT_DB_HOST:-127.0.0.1}
case $db_host in
*[!0-9A-Za-z.:_-]*) solar_die "input db_host must be a host name or address, got '$db_host'" ;;
esac
password=${SOLAR_INPUT_DB_PASSWORD:-}
case $password in
*"$nl"*) solar_die "input db_password must be a single line" ;;
esac
# Without a password the URL has no user info separator for it: keystone@host.
user=keystone
[ -z "$password" ] || user=keystone:$password

solar_put "$work/keystone.conf" 0600 "# keystone $SOLAR_RESOURCE, written by solar
[DEFAULT]
public_port = $port
admin_port = $admin_port

[database]
connection = mysql://$user@$db_host:$db_port/keystone
" keys
solar_done
