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
# kept and the ratios are of the bests, solar over loop. The progress lines
# go to a file (PROGRESS=tty sends them to the terminal, if stderr is one).
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

# run_solar SHAPE prints the nanoseconds of one run-once on a fresh copy.
run_solar() {
	rm -rf "$work/run" "$work/out-$1"
	cp -R "$work/$1" "$work/run"
	mkdir -p "$work/out-$1"
	sync
	if [ "${PROGRESS:-}" = tty ]; then
		t0=$(now)
		"$solar" --db "$work/run/solar.db" orch run-once last --concurrency "$ways" >/dev/null
		t1=$(now)
	else
		t0=$(now)
		"$solar" --db "$work/run/solar.db" orch run-once last --concurrency "$ways" >/dev/null 2>"$work/progress"
		t1=$(now)
	fi
	# The benchbase logs every run: check that all ran.
	if [ -f "$base/../benchbase/actions/run.sh" ]; then
		got=$(wc -l <"$work/out-$1/runs.log")
		[ "$got" -eq "$n" ] || {
			echo "bench-cli: run-once of $1 ran $got scripts, want $n" >&2
			exit 1
		}
	fi
	echo $((t1 - t0))
}

# loop_part FIRST LAST OUT runs the script for resources rFIRST..rLAST, one
# after the other, as solar runs a task's script.
loop_part() {
	i=$1
	while [ "$i" -le "$2" ]; do
		SOLAR_RESOURCE=r$i SOLAR_TASK=r$i.run SOLAR_ACTION=run /bin/sh "$script"
		i=$((i + 1))
	done
}

# run_loop SHAPE prints the nanoseconds of the loop of that shape.
run_loop() {
	rm -rf "$work/out-$1" "$work/loop"
	mkdir -p "$work/out-$1" "$work/loop"
	sync
	cd "$base"
	export SOLAR_INPUT_DIR="$work/out-$1" SOLAR_INPUT_PATH=app.conf SOLAR_INPUT_MODE=0644
	export SOLAR_INPUT_CONTENT='listen 8080'
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
	unset SOLAR_INPUT_DIR SOLAR_INPUT_PATH SOLAR_INPUT_MODE SOLAR_INPUT_CONTENT
	cd "$root"
	echo $((t1 - t0))
}

ms() { echo "$1" | awk '{ printf "%.0f", $1 / 1e6 }'; }

for s in $shapes; do
	make_store "$s"
done
echo "solar: $solar; base: $base; n=$n, ways=$ways, rounds=$rounds"
for s in $shapes; do
	eval "best_solar_$s= best_loop_$s="
done
r=1
while [ "$r" -le "$rounds" ]; do
	for s in $shapes; do
		a=$(run_solar "$s")
		b=$(run_loop "$s")
		printf '%s round %d: solar %s ms, loop %s ms, %s\n' "$s" "$r" "$(ms "$a")" "$(ms "$b")" \
			"$(echo "$a $b" | awk '{ printf "%.2fx", $1 / $2 }')"
		eval "bs=\$best_solar_$s bl=\$best_loop_$s"
		if [ -z "$bs" ] || [ "$a" -lt "$bs" ]; then eval "best_solar_$s=$a"; fi
		if [ -z "$bl" ] || [ "$b" -lt "$bl" ]; then eval "best_loop_$s=$b"; fi
	done
	r=$((r + 1))
done
for s in $shapes; do
	eval "bs=\$best_solar_$s bl=\$best_loop_$s"
	printf '%s: best solar %s ms, best loop %s ms: %s\n' "$s" "$(ms "$bs")" "$(ms "$bl")" \
		"$(echo "$bs $bl" | awk '{ printf "%.2fx", $1 / $2 }')"
done
