# The solar remote wrapper: runs one attempt of an action script on a node.
# It is the whole command of an SSH session (run by /bin/sh -c); nothing in
# it comes from the operator. Everything variable arrives on stdin:
#   line 1: VERSION NONCE BASE GRACE HBWAIT ENVLEN RESULTMAX KEY
#   then ENVLEN bytes of shell assignments, every value single-quoted,
#   then one "h" line per heartbeat; an "s" line or the end of stdin stops
#   the attempt.
# KEY (hex) names what the attempt acts on, the resource: no two attempts
# of one KEY run here at once (see claim). "-" is an attempt that changes
# nothing (check mode), which waits for no one.
# sshd makes the session a process group of its own, so "kill 0" reaches
# the script and everything it started, and nothing else.
# It must stay free of single quotes: it travels inside them.
umask 077
IFS=" " read -r v n h g hb len lim key || exit 97
if [ "$v" != 2 ]; then
	echo "solar-wrapper: protocol version $v is not supported by this wrapper" >&2
	exit 97
fi
case $key in "" | *[!0-9a-f-]*) exit 97 ;; esac
b=${XDG_CACHE_HOME:-$HOME/.cache}/solar/bases/$h
if [ ! -d "$b" ]; then
	printf "\036%s nobase\n" "$n"
	exit 0
fi
d=
for r in "$XDG_RUNTIME_DIR" /dev/shm "${TMPDIR:-/tmp}"; do
	if [ -n "$r" ] && [ -d "$r" ] && [ -w "$r" ] && mkdir "$r/solar-$$-$n" 2>/dev/null; then
		d=$r/solar-$$-$n
		break
	fi
done
if [ -z "$d" ]; then
	echo "solar-wrapper: cannot make a private directory in \$XDG_RUNTIME_DIR, /dev/shm or \$TMPDIR" >&2
	exit 98
fi
k=
cleanup() { rm -rf -- "$d" ${k:+"$k"}; }
trap cleanup EXIT
head -c "$len" >"$d/env" || exit 98
. "$d/env"
export SOLAR_INPUTS="$d/inputs.json" SOLAR_RESULT="$d/result.json"
cd "$b" || exit 98

# pstat PID sets xz, xg and xs to the state, the process group and the
# start time (clock ticks since boot, field 22) of process PID, read from
# /proc/PID/stat; it fails when there is no such process. The command
# name, in parentheses, may hold anything: fields count from the last ") ".
pstat() {
	{ read -r l </proc/"$1"/stat; } 2>/dev/null || return 1
	l=${l##*) }
	set -- $l
	xz=$1 xg=$3 xs=${20}
}
# now sets ct to the time since boot in hundredths of a second.
now() {
	read -r ct l </proc/uptime
	ct=${ct%%.*}${ct#*.}
	ct=${ct#0}
	ct=${ct#0}
}
# An attempt with a KEY keeps a record at K while it may run, one line:
#   STATE PGRP PID START BOOT DIR
# the process group, pid and start time of this shell (the pid alone may
# name a stranger once it is reused), the boot id of the kernel, and the
# private directory, where a later attempt asks this one to stop. STATE
# is "run", then "done" once the script has ended: what it left behind
# in the group, a service it started, belongs to no attempt. The record
# is made before the script starts and removed with the private
# directory; an attempt that is killed leaves it, and the next attempt
# of KEY finds the group by it.
R=${XDG_CACHE_HOME:-$HOME/.cache}/solar/running
K=$R/$key
me=
if [ "$key" != - ]; then
	if ! pstat $$; then
		echo "solar-wrapper: cannot read /proc/$$/stat: solar needs the /proc of Linux on nodes" >&2
		exit 98
	fi
	bt=-
	{ read -r bt </proc/sys/kernel/random/boot_id; } 2>/dev/null
	me="$xg $$ $xs $bt $d"
fi
# gone PID START [PGRP]: no process of the attempt so named is left: PID
# is not its shell any more (dead, a zombie, or reused: another start
# time) and PGRP, when given, has no live member that started no earlier
# than the shell. A group number is not reused while the group has
# members (zombies included), so such a member is taken for one of the
# attempt, as the runner does on its own machine; but if the stop of the
# attempt noted when it killed the group (K.end), a member started later
# belongs to a stranger that got the number since (a service another
# attempt left), and is left alone. Members are looked for in /proc, not
# with kill -0, which counts zombies (a node whose init reaps late keeps
# them) and cannot tell a process of another user (one that went through
# sudo) from none.
gone() {
	if pstat "$1" && [ "$xs" = "$2" ] && [ "$xz" != Z ] && [ "$xz" != X ]; then
		return 1
	fi
	[ -n "$3" ] || return 0
	gp=$3 gs=$2 ge=
	if { read -r ge eg ep es el <"$K.end"; } 2>/dev/null && [ "$eg $ep $es" = "$3 $1 $2" ]; then
		# A second of slack for the tick and the signal on its way; a
		# damaged note bounds nothing.
		case $ge in "" | *[!0-9]*) ge= ;; *) ge=$((ge + 100)) ;; esac
	else
		ge=
	fi
	for f in /proc/[0-9]*/stat; do
		{ read -r l <"$f"; } 2>/dev/null || continue
		l=${l##*) }
		set -- $l
		if [ "$3" = "$gp" ] && [ "$1" != Z ] && [ "$1" != X ] && [ "${20}" -ge "$gs" ] &&
			{ [ -z "$ge" ] || [ "${20}" -le "$ge" ]; }; then
			return 1
		fi
	done
}
# waitgone CENTIS PID START [PGRP]: gone within CENTIS hundredths.
waitgone() {
	now
	e=$((ct + $1))
	while ! gone "$2" "$3" "$4"; do
		now
		[ "$ct" -lt "$e" ] || return 1
		sleep 0.1
	done
}
# settle FILE returns once no process of the attempt whose record is FILE
# is left (or the record is stale), having set j to the line it judged.
# An attempt that had finished is let end; its shell is killed if it
# lingers. A running one is asked to stop as a stop would (SIGTERM, the
# grace, then SIGKILL) and SIGKILLed if it is not gone after the grace
# and 1.5s more (its watchdog looks for the request once a second); a
# note tells the controller.
# It fails, saying why, when the group outlives SIGKILL.
settle() {
	now
	t0=$ct
	j=
	while ! { read -r st rg rp rs rb rd <"$1"; } 2>/dev/null; do
		# Missing: gone meanwhile. Cut short: its writer is in the middle
		# of writing it, or died there, before its script started.
		[ -e "$1" ] || return 0
		now
		[ "$ct" -lt $((t0 + 100)) ] || return 0
		sleep 0.1
	done
	j="$st $rg $rp $rs $rb $rd"
	case $st in run | done) ;; *) return 0 ;; esac
	case $rg:$rp:$rs in *[!0-9:]* | :* | *::* | *:) return 0 ;; esac
	[ "$rb" = "$bt" ] && [ "$rg" -gt 1 ] && [ "$rp" -gt 1 ] || return 0
	if [ "$st" = done ]; then
		# It reports and removes the record: a moment.
		waitgone 200 "$rp" "$rs" && return 0
		pstat "$rp" && [ "$xs" = "$rs" ] && kill -s KILL "$rp" 2>/dev/null
		waitgone 500 "$rp" "$rs" && return 0
		echo "solar-wrapper: the shell of a finished attempt of this resource (pid $rp) outlives SIGKILL by 5s: end it on the node, then retry" >&2
		return 1
	fi
	if ! gone "$rp" "$rs" "$rg"; then
		[ -d "$rd" ] && { echo >"$rd/stop"; } 2>/dev/null
		if waitgone $((g * 10 + 150)) "$rp" "$rs" "$rg"; then
			now
			printf "\036%s note ended %s\n" "$n" $((ct - t0))
		else
			kill -s KILL -- "-$rg" 2>/dev/null
			if ! waitgone 500 "$rp" "$rs" "$rg"; then
				echo "solar-wrapper: a previous attempt of this resource left process group $rg, which outlives SIGKILL by 5s (a process in uninterruptible sleep, or one that became another user): end it on the node, then retry" >&2
				return 1
			fi
			now
			printf "\036%s note killed %s\n" "$n" $((ct - t0))
		fi
	fi
	# A killed attempt could not remove its private directory, which
	# holds its secrets.
	case $rd in */solar-[0-9]*-[0-9a-f]*) [ ! -d "$rd" ] || rm -rf -- "$rd" ;; esac
}
# claim makes the record of this attempt once no earlier attempt of KEY is
# left on the node. Making it is the atomic step: noclobber opens it with
# O_EXCL, so of two attempts that find no record one makes it. A record
# found is settled, then taken away by a rename, which only one attempt
# can do, and removed; had another attempt put its own record there
# meanwhile, that one is settled too.
claim() {
	if [ ! -d "$R" ] && ! mkdir -p "$R"; then
		echo "solar-wrapper: cannot make $R" >&2
		return 1
	fi
	i=0
	while [ "$i" -lt 50 ]; do
		i=$((i + 1))
		set -C
		if { printf "run %s\n" "$me" >"$K"; } 2>/dev/null; then
			set +C
			return 0
		fi
		set +C
		[ -e "$K" ] || continue
		settle "$K" || return 1
		mv -f -- "$K" "$K.$n" 2>/dev/null || continue
		x=
		{ read -r x <"$K.$n"; } 2>/dev/null
		if [ "$x" != "$j" ]; then
			settle "$K.$n" || return 1
		fi
		rm -f -- "$K.$n" "$K.end"
	done
	echo "solar-wrapper: cannot make the record $K" >&2
	return 1
}

# The script starts once its record is made: an executable script runs
# as written (its #! line picks the interpreter; sh runs one without #!
# itself); any other under /bin/sh.
(
	if [ "$key" != - ] && ! claim; then
		echo >"$d/busy"
		exit 98
	fi
	if [ -x "$s" ]; then
		exec "./$s"
	fi
	exec /bin/sh "$s"
) </dev/null &
p=$!
# stop ends the attempt: SIGTERM to the group, SIGKILL once the script is
# gone or GRACE tenths of a second have passed. The private directory,
# which holds secrets, goes before the SIGKILL that ends this shell too,
# and K.end notes when the group was killed (see gone).
# Of the two processes of the watchdog, the first to stop does it.
stop() {
	trap "" TERM
	set -C
	{ echo >"$d/stopping"; } 2>/dev/null || exit 0
	set +C
	kill -TERM 0
	i=0
	while [ "$i" -lt "$g" ] && kill -0 "$p"; do
		sleep 0.1
		i=$((i + 1))
	done
	rm -rf -- "$d"
	if [ -n "$me" ]; then
		now
		printf "%s %s\n" "$ct" "$me" >"$K.end"
	fi
	kill -KILL 0
}
# The watchdog reads the controller: heartbeats, or stop. An asynchronous
# list reads /dev/null unless told otherwise, so stdin goes through fd 3.
# Its timer ends the attempt when no heartbeat came for HBWAIT seconds: the
# controller is gone without a word (a partition); or when a later attempt
# of the same resource asks it to (a "stop" file in the private
# directory). The timer sleeps a second at a time and ends once the
# private directory is gone, so that no process of a finished attempt
# outlives it by more than a second.
exec 3<&0
(
	trap "" TERM
	echo h >"$d/beat"
	(
		trap "" TERM
		i=0
		while sleep 1; do
			[ -d "$d" ] || exit 0
			[ -e "$d/stop" ] && break
			i=$((i + 1))
			[ "$i" -lt "$hb" ] && continue
			i=0
			[ -s "$d/beat" ] || break
			: >"$d/beat"
		done
		[ -d "$d" ] || exit 0
		stop
	) &
	echo "$!" >"$d/timer"
	while IFS= read -r x; do
		[ "$x" = h ] || break
		echo h >"$d/beat"
	done
	stop
) <&3 >/dev/null 2>&1 &
w=$!
exec 3<&-
wait "$p"
c=$?
# The script has ended: the record says so before the watchdog goes.
x=
[ "$key" = - ] || { read -r x <"$K"; } 2>/dev/null
if [ -n "$x" ] && [ "$x" = "run $me" ]; then
	printf "done %s\n" "$me" >"$K"
	k=$K
fi
t=
[ -f "$d/timer" ] && read -r t <"$d/timer"
kill -KILL "$w" $t 2>/dev/null
[ -e "$d/busy" ] && exit 98
trap "" PIPE
printf "\036%s exit %s " "$n" "$c"
if [ -f "$d/result.json" ]; then
	printf "result\n"
	head -c "$((lim + 1))" "$d/result.json"
	printf "\n%s.\n" "$n"
elif [ -e "$d/result.json" ]; then
	printf "odd\n"
else
	printf "none\n"
fi
