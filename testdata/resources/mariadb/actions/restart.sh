#!/bin/sh
# mariadb restart: a restart always changes the running service, so it always
# reports "changed"; the restarted file's time stamp records the last one.
case $0 in */*) . "${0%/*}/lib.sh" ;; *) . ./lib.sh ;; esac
solar_init
touch "$work/restarted"
changed=1
solar_done
