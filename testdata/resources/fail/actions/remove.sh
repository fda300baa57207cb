#!/bin/sh
# fail remove: delete the marker and the attempt count, keeping actions.log.
case $0 in */*) . "${0%/*}/lib.sh" ;; *) . ./lib.sh ;; esac
solar_init
solar_wipe
solar_done
