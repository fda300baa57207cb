# Functions the wrapper and the guard share; Go puts this text before
# each of them. It must stay free of single quotes: it travels inside them.

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
# gone PID START [PGRP [ENDNOTE]]: no process of the attempt so named is
# left: PID is not its first process any more (dead, a zombie, or reused:
# another start time) and PGRP, when given, has no live member that
# started no earlier than it. A group number is not reused while the group
# has members (zombies included), so such a member is taken for one of the
# attempt; but if the stop of the attempt noted when it killed the group
# (ENDNOTE, K.end), a member started later belongs to a stranger that got
# the number since (a service another attempt left), and is left alone.
# Members are looked for in /proc, not with kill -0, which counts zombies
# and cannot tell a process of another user (one that went through sudo)
# from none.
gone() {
	if pstat "$1" && [ "$xs" = "$2" ] && [ "$xz" != Z ] && [ "$xz" != X ]; then
		return 1
	fi
	[ -n "$3" ] || return 0
	gp=$3 gs=$2 ge=
	if [ -n "$4" ] && { read -r ge eg ep es el <"$4"; } 2>/dev/null && [ "$eg $ep $es" = "$3 $1 $2" ]; then
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
# waitgone CENTIS PID START [PGRP [ENDNOTE]]: gone within CENTIS
# hundredths of a second.
waitgone() {
	now
	e=$((ct + $1))
	while ! gone "$2" "$3" "$4" "$5"; do
		now
		[ "$ct" -lt "$e" ] || return 1
		sleep 0.1
	done
}
