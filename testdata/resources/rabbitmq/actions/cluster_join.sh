#!/bin/sh
# rabbitmq cluster_join: join the cluster of the node named by join_to. That
# node must have created (or joined) a cluster already: failing loudly here is
# what makes a wrongly ordered plan visible.
case $0 in */*) . "${0%/*}/lib.sh" ;; *) . ./lib.sh ;; esac
solar_init

join_to=${SOLAR_INPUT_JOIN_TO:-}
case $join_to in
'') solar_die "input join_to is empty: name the rabbitmq resource to join" ;;
*/* | . | .. | *"$nl"*) solar_die "input join_to must be a resource name, got '$join_to'" ;;
"$SOLAR_RESOURCE") solar_die "cannot join itself (join_to is $join_to)" ;;
esac
[ -f "$dir/$join_to/cluster" ] ||
	solar_die "cannot join $join_to: $dir/$join_to/cluster does not exist yet (has $join_to.cluster_create run?)"

solar_put "$work/cluster" 0644 "joined $join_to
"
solar_done
