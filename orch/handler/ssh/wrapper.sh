# The solar remote wrapper: starts one attempt of an action script on a
# node, then becomes the script (exec), so that an attempt costs the node
# no process beyond the script's own. It is the whole command of an SSH
# session (run by /bin/sh -c); nothing in it comes from the operator.
# Everything variable arrives on stdin, as shell text up to its end:
#   the assignments v (VERSION) n (NONCE) h (BASE) D (DIR) key (KEY)
#   g (GRACE) bt (the node's boot id, as the guard read it), then the
#   attempt's, every value single-quoted, and solar_inputs, a function
#   that writes the inputs file.
# DIR is the private directory of the connection's guard (guard.sh), which
# watches the attempt: it stops it when asked, when the controller goes
# away, or when heartbeats stop; once the session has ended it reports the
# result file and tidies up. The attempt's files are DIR/NONCE.*.
# KEY (hex) names what the attempt acts on, the resource: no two attempts
# of one KEY run here at once (see claim). "-" is an attempt that changes
# nothing (check mode), which waits for no one.
# sshd makes the session a process group of its own, whose leader this
# shell is, and then the script: a group kill reaches the script and
# everything it started, and nothing else.
# It must stay free of single quotes: it travels inside them.
umask 077
# Everything on stdin is shell text the controller made, one read away:
# the shell reads a pipe a buffer at a time, but the read builtin a byte at
# a time.
if [ -p /dev/stdin ]; then
	. /dev/stdin
else
	e=
	while IFS= read -r l; do
		e="$e$l
"
	done
	eval "$e"
fi
if [ "$v" != 3 ]; then
	echo "solar-wrapper: protocol version $v is not supported by this wrapper" >&2
	exit 97
fi
case $key in "" | *[!0-9a-f-]*) exit 97 ;; esac
case $g in "" | *[!0-9]*) exit 97 ;; esac
b=${XDG_CACHE_HOME:-$HOME/.cache}/solar/bases/$h
if [ ! -d "$b" ]; then
	printf "\036%s nobase\n" "$n"
	exit 0
fi
# The guard's pid is in its directory's name.
gw=${D##*/solar-}
gw=${gw%%-*}
if [ ! -d "$D" ] || [ -e "$D/dead" ]; then
	echo "solar-wrapper: the guard of this connection is gone" >&2
	exit 98
fi
d=$D/$n
export SOLAR_INPUTS="$d.inputs.json" SOLAR_RESULT="$d.result.json"
cd "$b" || exit 98
if ! pstat $$; then
	echo "solar-wrapper: cannot read /proc/$$/stat: solar needs the /proc of Linux on nodes" >&2
	exit 98
fi
solar_inputs
# The guard finds the attempt by this line: its process group, first
# process and start time, its grace in tenths of a second and its KEY.
# It is written before the script can start.
printf "%s %s %s %s %s\n" "$xg" $$ "$xs" "$g" "$key" >"$d.pid"

# An attempt with a KEY keeps a record at K while it may run, one line:
#   STATE PGRP PID START BOOT FILES
# the process group, pid and start time of this shell, which becomes the
# script (the pid alone may name a stranger once it is reused), the boot
# id of the kernel, and the prefix of the attempt's files. STATE is "run",
# then "done" once the script has ended (the guard says so): what it left
# behind in the group, a service it started, belongs to no attempt. The
# record is made before the script starts; the guard removes it once the
# attempt has ended. An attempt that is killed leaves it, and the next
# attempt of KEY finds the group by it.
me="$xg $$ $xs $bt $d"
# settle FILE returns once no process of the attempt whose record is FILE
# is left (or the record is stale), having set j to the line it judged.
# An attempt that had finished is let end; its shell is killed if it
# lingers. A running one is stopped as a stop would (SIGTERM to its group,
# the grace, then SIGKILL); a note tells the controller.
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
		waitgone 200 "$rp" "$rs" && return 0
		pstat "$rp" && [ "$xs" = "$rs" ] && kill -s KILL "$rp" 2>/dev/null
		waitgone 500 "$rp" "$rs" && return 0
		echo "solar-wrapper: the shell of a finished attempt of this resource (pid $rp) outlives SIGKILL by 5s: end it on the node, then retry" >&2
		return 1
	fi
	if ! gone "$rp" "$rs" "$rg" "$K.end"; then
		kill -s TERM -- "-$rg" 2>/dev/null
		if waitgone $((g * 10 + 150)) "$rp" "$rs" "$rg" "$K.end"; then
			now
			printf "\036%s note ended %s\n" "$n" $((ct - t0))
		else
			kill -s KILL -- "-$rg" 2>/dev/null
			if ! waitgone 500 "$rp" "$rs" "$rg" "$K.end"; then
				echo "solar-wrapper: a previous attempt of this resource left process group $rg, which outlives SIGKILL by 5s (a process in uninterruptible sleep, or one that became another user): end it on the node, then retry" >&2
				return 1
			fi
			now
			printf "\036%s note killed %s\n" "$n" $((ct - t0))
		fi
	fi
	# A killed attempt could not have its files removed, which hold its
	# secrets.
	case $rd in */solar-[0-9]*-[0-9a-f]*/[0-9a-f]*) rm -f -- "$rd.inputs.json" "$rd.result.json" ;; esac
}
# claim makes the record of this attempt once no earlier attempt of KEY is
# left on the node. Making it is the atomic step: noclobber opens it with
# O_EXCL, so of two attempts that find no record one makes it. A record
# found (but one of this connection's own that ended) is settled, then taken away by a rename, which only one attempt
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
		# The record of a finished attempt of this connection (its guard
		# has not tidied it yet) is taken over in place: any other
		# attempt takes a record away by a rename first, and settles what
		# it finds in it.
		st= rest=
		{ read -r st rg rp rs rest <"$K"; } 2>/dev/null
		case $st:$rest in
		done:*" $D/"*)
			if gone "$rp" "$rs"; then
				printf "run %s\n" "$me" >"$K"
				return 0
			fi
			;;
		esac
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
if [ "$key" != - ]; then
	R=${XDG_CACHE_HOME:-$HOME/.cache}/solar/running
	K=$R/$key
	claim || exit 98
fi
# Registered before this look: a guard that gives up later stops the
# attempt; one that gave up earlier is seen here.
if [ -e "$D/dead" ] || ! kill -0 "$gw" 2>/dev/null; then
	echo "solar-wrapper: the guard of this connection is gone" >&2
	exit 98
fi
# From here on the exit status is the script's. An executable script runs
# as written (its #! line picks the interpreter; sh runs one without #!
# itself); any other under /bin/sh.
printf "\036%s start\n" "$n"
exec </dev/null
if [ -x "$s" ]; then
	exec "./$s"
fi
exec /bin/sh "$s"
