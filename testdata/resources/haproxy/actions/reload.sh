#!/bin/sh
# haproxy reload: a reload always changes the running service, so it always
# reports "changed"; reloaded_at counts the reloads so tests can see how many
# ran.
case $0 in */*) . "${0%/*}/lib.sh" ;; *) . ./lib.sh ;; esac
solar_init
count=0
[ ! -f "$work/reloaded_at" ] || read -r count <"$work/reloaded_at" || :
case $count in '' | *[!0-9]*) count=0 ;; esac
printf '%s\n' "$((count + 1))" >"$work/reloaded_at"
changed=1
solar_done
