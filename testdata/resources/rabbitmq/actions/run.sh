#!/bin/sh
# rabbitmq run (and update): converge rabbitmq.conf and the Erlang cookie.
case $0 in */*) here=${0%/*} ;; *) here=. ;; esac
. "$here/lib.sh"
solar_init
. "$here/cluster_name.sh"

solar_port port "${SOLAR_INPUT_PORT:-}" 5672
cookie=${SOLAR_INPUT_ERLANG_COOKIE-cookie}
[ -n "$cookie" ] || solar_die "input erlang_cookie is empty"
case $cookie in
*"$nl"*) solar_die "input erlang_cookie must be a single line" ;;
esac

solar_put "$work/rabbitmq.conf" 0644 "# rabbitmq $SOLAR_RESOURCE, written by solar
listeners.tcp.default = $int
cluster_name = $cluster_name
" keys
solar_put "$work/.erlang.cookie" 0400 "$cookie"
solar_done
