#!/bin/sh
# password remove: the secret lives only in solar's store, which forgets it with
# the resource; only the resource's own directory is emptied here.
case $0 in */*) . "${0%/*}/lib.sh" ;; *) . ./lib.sh ;; esac
solar_init
solar_wipe
solar_done
