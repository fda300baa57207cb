#!/bin/sh
# mariadb run (and update): converge my.cnf, root.cnf and the data directory.
# Files already as wanted are not touched, and the result is then "ok".
case $0 in */*) . "${0%/*}/lib.sh" ;; *) . ./lib.sh ;; esac
solar_init

solar_port port "${SOLAR_INPUT_PORT:-}" 3306
ip=${SOLAR_INPUT_IP:-127.0.0.1}
case $ip in
*[!0-9A-Za-z.:_-]*) solar_die "input ip must be a host name or address, got '$ip'" ;;
esac
password=${SOLAR_INPUT_ROOT_PASSWORD:-}
[ -n "$password" ] || solar_die "input root_password is empty"
case $password in
*"$nl"*) solar_die "input root_password must be a single line" ;;
esac

solar_mkdir "$work/data"
solar_put "$work/my.cnf" 0644 "# mariadb server $SOLAR_RESOURCE, written by solar
[mysqld]
bind-address = $ip
port = $int
datadir = $work/data
" keys
solar_put "$work/root.cnf" 0600 "[client]
user = root
password = $password
" keys
solar_done
