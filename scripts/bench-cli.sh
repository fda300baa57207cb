#!/bin/sh
# bench-cli.sh: solar orch run-once from the command line against plain
# shell loops running the same script the same way (issue 32).
#
#   sh scripts/bench-cli.sh            (or: make bench-cli)
#
# Two plans of N tasks (default 1,000) of a trivial shell base
# (orch/testdata/benchbase: appends one line), each made once in a store of
# its own with the real CLI (resource create of a composition, ch process):
#
#   wide   N independent tasks, run-once --concurrency 10, against 10 sh
#          loops at once, each running its share of the N scripts;
#   chain  N tasks, each after the one before (on rI.run changed rI+1.run),
#          run-once, against one sh loop running N scripts one after the other.
#
# Each loop runs /bin/sh SCRIPT in the base directory with the environment
# solar gives a task (SOLAR_RESOURCE, SOLAR_TASK, SOLAR_ACTION, SOLAR_RESULT,
# SOLAR_INPUT_DIR), one fork and exec per script as under solar. Only the
# run-once and the loops are timed: every run-once works on a fresh copy of
# the made store, copied before its clock starts. Runs alternate (solar
# wide, loop wide, solar chain, loop chain) ROUNDS times; the best of each is
# kept and the ratios are of the bests, solar over loop. The CPU time of
# each (user and system, the scripts' included) is shown too: on a machine
# others load, it varies less than the wall time, and with every core busy
# the wall ratio follows it. The progress lines go to a file (PROGRESS=tty
# sends them to the terminal, if stderr is one).
#
# Settings (environment): N=1000, ROUNDS=3, WAYS=10, BASE=a base directory
# (default orch/testdata/benchbase; testdata/resources/file is
# BenchmarkShellWide's), SHAPES="wide chain", SOLAR=a solar binary to use
# instead of building one, KEEP=1 to keep the work directory.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
n=${N:-1000}
rounds=${ROUNDS:-3}
ways=${WAYS:-10}
shapes=${SHAPES:-wide chain}
base=$(cd "${BASE:-$root/orch/testdata/benchbase}" && pwd)
script=actions/run.sh
work=$(mktemp -d "${TMPDIR:-/tmp}/solar-bench-cli.XXXXXX")
if [ "${KEEP:-}" != 1 ]; then
	trap 'rm -rf "$work"' EXIT
fi
unset SOLAR_DB SOLAR_LOCK_WAIT

# now prints the time in nanoseconds (GNU date).
now() { date +%s%N; }

# cpu prints the CPU time (user and system, in ms) of this shell and the
# children it has waited for: a run's CPU is the difference around it.
# times runs in this shell, not in a subshell of a pipe, to see them.
cpu() {
	times >"$work/cpu"
	awk '{ for (i = 1; i <= 2; i++) { split($i, p, "m"); t += p[1] * 60000 + p[2] * 1000 } } END { printf "%.0f", t }' "$work/cpu"
}

if [ -n "${SOLAR:-}" ]; then
	solar=$SOLAR
else
	(cd "$root" && go build -o "$work/solar" ./cmd/solar)
	solar=$work/solar
fi

# The file base's inputs besides dir, given to a base that has them.
extra=
if grep -q '^  content:' "$base/meta.yaml"; then
	extra=', path: app.conf, content: "listen 8080", mode: "0644"'
fi

# compose SHAPE writes the composition of N resources r1..rN of the base.
compose() {
	{
		echo "resources:"
		i=1
		while [ "$i" -le "$n" ]; do
			printf '  - {id: r%d, from: "%s", input: {dir: "%s"%s}}\n' "$i" "$base" "$work/out-$1" "$extra"
			i=$((i + 1))
		done
		[ "$1" = chain ] || return 0
		echo "events:"
		i=1
		while [ "$i" -lt "$n" ]; do
			echo "  - on r$i.run changed r$((i + 1)).run"
			i=$((i + 1))
		done
	} >"$work/$1.yaml"
}

# make SHAPE makes the store $work/SHAPE/solar.db holding the plan.
make_store() {
	mkdir -p "$work/$1"
	compose "$1"
	"$solar" --db "$work/$1/solar.db" resource create "$1" "$work/$1.yaml" >/dev/null 2>&1
	"$solar" --db "$work/$1/solar.db" ch process >/dev/null 2>&1
}

# run_solar SHAPE prints the nanoseconds and the CPU milliseconds (solar's
# and its scripts') of one run-once on a fresh copy.
run_solar() {
	rm -rf "$work/run" "$work/out-$1"
	cp -R "$work/$1" "$work/run"
	mkdir -p "$work/out-$1"
	sync
	cpu >"$work/c0"
	if [ "${PROGRESS:-}" = tty ]; then
		t0=$(now)
		"$solar" --db "$work/run/solar.db" orch run-once last --concurrency "$ways" >/dev/null
		t1=$(now)
	else
		t0=$(now)
		"$solar" --db "$work/run/solar.db" orch run-once last --concurrency "$ways" >/dev/null 2>"$work/progress"
		t1=$(now)
	fi
	cpu >"$work/c1"
	# The benchbase logs every run: check that all ran.
	if [ "$base" = "$root/orch/testdata/benchbase" ]; then
		got=$(wc -l <"$work/out-$1/runs.log")
		[ "$got" -eq "$n" ] || {
			echo "bench-cli: run-once of $1 ran $got scripts, want $n" >&2
			exit 1
		}
	fi
	echo $((t1 - t0)) $(($(cat "$work/c1") - $(cat "$work/c0")))
}

# loop_part FIRST LAST runs the script for resources rFIRST..rLAST, one
# after the other, as solar runs a task's script.
loop_part() {
	i=$1
	while [ "$i" -le "$2" ]; do
		SOLAR_RESOURCE=r$i SOLAR_TASK=r$i.run SOLAR_ACTION=run /bin/sh "$script"
		i=$((i + 1))
	done
}

# run_loop SHAPE prints the nanoseconds and the CPU milliseconds of the
# loop of that shape.
run_loop() {
	rm -rf "$work/out-$1" "$work/loop"
	mkdir -p "$work/out-$1" "$work/loop"
	sync
	cd "$base"
	export SOLAR_INPUT_DIR="$work/out-$1" SOLAR_INPUT_PATH=app.conf SOLAR_INPUT_MODE=0644
	export SOLAR_INPUT_CONTENT='listen 8080'
	cpu >"$work/c0"
	t0=$(now)
	if [ "$1" = chain ]; then
		SOLAR_RESULT=$work/loop/result.json loop_part 1 "$n"
	else
		w=0
		while [ "$w" -lt "$ways" ]; do
			SOLAR_RESULT=$work/loop/result$w.json loop_part $((w * n / ways + 1)) $(((w + 1) * n / ways)) &
			w=$((w + 1))
		done
		wait
	fi
	t1=$(now)
	cpu >"$work/c1"
	unset SOLAR_INPUT_DIR SOLAR_INPUT_PATH SOLAR_INPUT_MODE SOLAR_INPUT_CONTENT
	cd "$root"
	echo $((t1 - t0)) $(($(cat "$work/c1") - $(cat "$work/c0")))
}

for s in $shapes; do
	make_store "$s"
done
echo "solar: $solar; base: $base; n=$n, ways=$ways, rounds=$rounds"
# Each line of $work/times: shape, round, then the wall ns and CPU ms of
# solar, then of the loop.
show_round() {
	awk '{ printf "%s round %d: solar %.0f ms (CPU %d ms), loop %.0f ms (CPU %d ms): %.2fx wall, %.2fx CPU\n",
		$1, $2, $3 / 1e6, $4, $5 / 1e6, $6, $3 / $5, $4 / $6 }'
}
r=1
while [ "$r" -le "$rounds" ]; do
	for s in $shapes; do
		a=$(run_solar "$s")
		b=$(run_loop "$s")
		echo "$s $r $a $b" | tee -a "$work/times" | show_round
	done
	r=$((r + 1))
done
[ "$rounds" -gt 0 ] || exit 0
awk '
{ if (!($1 in bs) || $3 < bs[$1]) bs[$1] = $3
  if (!($1 in bl) || $5 < bl[$1]) bl[$1] = $5
  if (!($1 in cs) || $4 < cs[$1]) cs[$1] = $4
  if (!($1 in cl) || $6 < cl[$1]) cl[$1] = $6
  if (!($1 in seen)) { seen[$1] = 1; order[++k] = $1 } }
END { for (i = 1; i <= k; i++) { s = order[i]
  printf "%s: best solar %.0f ms, best loop %.0f ms: %.2fx (CPU %d ms against %d ms: %.2fx)\n", s, bs[s] / 1e6, bl[s] / 1e6, bs[s] / bl[s], cs[s], cl[s], cs[s] / cl[s] } }' "$work/times"
