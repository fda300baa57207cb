#!/bin/sh
# mariadb remove: delete the configuration and the data, keeping actions.log.
case $0 in */*) . "${0%/*}/lib.sh" ;; *) . ./lib.sh ;; esac
solar_init
solar_wipe
solar_done
