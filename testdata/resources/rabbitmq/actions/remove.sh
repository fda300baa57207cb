#!/bin/sh
# rabbitmq remove: delete the configuration and the cluster state, keeping actions.log.
case $0 in */*) . "${0%/*}/lib.sh" ;; *) . ./lib.sh ;; esac
solar_init
solar_wipe
solar_done
