#!/bin/sh
# rabbitmq cluster_create: form the cluster on this node; "ok" when it already
# has.
case $0 in */*) here=${0%/*} ;; *) here=. ;; esac
. "$here/lib.sh"
solar_init
. "$here/cluster_name.sh"

solar_put "$work/cluster" 0644 "created $cluster_name
"
solar_done
