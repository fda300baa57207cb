# cluster_name.sh: sourced by this base's actions; checks the cluster_name
# input, which is written into files one line each.
cluster_name=${SOLAR_INPUT_CLUSTER_NAME:-rabbit}
case $cluster_name in
*[!0-9A-Za-z._@-]*) solar_die "input cluster_name must be letters, digits and ._@-, got '$cluster_name'" ;;
esac
