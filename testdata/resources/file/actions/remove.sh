#!/bin/sh
# file remove: delete <dir>/<path>; "ok" when it is already gone.
case $0 in */*) here=${0%/*} ;; *) here=. ;; esac
. "$here/lib.sh"
solar_init
. "$here/target.sh"

if [ -e "$target" ] || [ -L "$target" ]; then
	[ "$solar_check" = 1 ] || rm -f "$target"
	changed=1
fi
solar_done
