#!/bin/sh
# solar's quickstart: build solar, then on the bundled OpenStack-like example
# create -> stage -> process -> draw -> run -> report, change one input and
# run again to see that only the affected actions run.
#
#   sh scripts/demo.sh            (or: make demo)
#
# Everything happens in a fresh temporary directory (printed first): the
# store, the binary and the files the action scripts write. Set
# SOLAR_DEMO_KEEP=1 to keep it afterwards. It fails (non-zero) if any step
# fails, so CI runs it too.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/solar-demo.XXXXXX")
if [ "${SOLAR_DEMO_KEEP:-}" = "" ]; then
	trap 'rm -rf "$work"' EXIT
fi
export SOLAR_DB="$work/solar.db"
export SOLAR_DEMO_DIR="$work/nodes"
unset SOLAR_LOCK_WAIT

# Bold headings only on a terminal, and never with NO_COLOR set.
if [ -t 1 ] && [ -z "${NO_COLOR:-}" ]; then
	say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
else
	say() { printf '\n== %s\n' "$*"; }
fi
run() {
	printf '$ %s\n' "$*" | sed "s#$work#\$DEMO#g" >&2
	"$@"
}

say "building solar (work directory: $work)"
cd "$root"
go build -o "$work/bin/solar" ./cmd/solar
PATH="$work/bin:$PATH"

say "1. create the example: 11 resources, their connections and rules"
run solar resource create openstack testdata/examples/openstack/composition.yaml
run solar resource list

say "2. what is staged (every new resource stages its run action)"
run solar ch stage -t env=demo
run solar ch staged-item keystone.run

say "3. process the staged changes into a plan (cycles resolved by a second haproxy.run)"
uid=$(run solar ch process -t env=demo)
echo "$uid"
run solar orch show "$uid"
run solar orch dg "$uid" > "$work/plan.dot"
echo "(the graph in DOT is in \$DEMO/plan.dot, kept with SOLAR_DEMO_KEEP=1; render it with graphviz: dot -Tsvg plan.dot > plan.svg)"

say "4. dry run: what each task would change, and which rules would fire (nothing is written)"
run solar orch check last

say "5. run it: real scripts write real files under \$DEMO/nodes"
run solar orch run-once last
run solar orch report last
echo "files written:"
(cd "$SOLAR_DEMO_DIR" && find . -type f | sort | sed 's#^\./#  #')
echo "the rabbitmq cluster, in the order it formed:"
cat "$SOLAR_DEMO_DIR/rmq.1/actions.log" "$SOLAR_DEMO_DIR/rmq.2/actions.log" "$SOLAR_DEMO_DIR/rmq.3/actions.log" | grep cluster | sed 's/^/  /'

say "6. change one input: keystone listens on 5001"
run solar resource update keystone port=5001
run solar ch stage -d
run solar ch process
run solar orch run-once last
run solar orch report last
grep -n 5001 "$SOLAR_DEMO_DIR/haproxy/haproxy.cfg" | sed 's/^/  haproxy.cfg:/'

say "7. nothing staged any more; history keeps what was committed"
run solar ch stage
run solar ch history -n 5

say "done"
