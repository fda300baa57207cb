# The solar remote wrapper: runs one attempt of an action script on a node.
# It is the whole command of an SSH session (run by /bin/sh -c); nothing in
# it comes from the operator. Everything variable arrives on stdin:
#   line 1: VERSION NONCE BASE GRACE HBWAIT ENVLEN RESULTMAX
#   then ENVLEN bytes of shell assignments, every value single-quoted,
#   then one "h" line per heartbeat; an "s" line or the end of stdin stops
#   the attempt.
# sshd makes the session a process group of its own, so "kill 0" reaches
# the script and everything it started, and nothing else.
# It must stay free of single quotes: it travels inside them.
umask 077
IFS=" " read -r v n h g hb len lim || exit 97
if [ "$v" != 1 ]; then
	echo "solar-wrapper: protocol version $v is not supported by this wrapper" >&2
	exit 97
fi
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
cleanup() { rm -rf -- "$d"; }
trap cleanup EXIT
head -c "$len" >"$d/env" || exit 98
. "$d/env"
export SOLAR_INPUTS="$d/inputs.json" SOLAR_RESULT="$d/result.json"
cd "$b" || exit 98
# An executable script runs as written (its #! line picks the interpreter;
# sh runs one without #! itself); any other under /bin/sh.
if [ -x "$s" ]; then
	"./$s" </dev/null &
else
	/bin/sh "$s" </dev/null &
fi
p=$!
# stop ends the attempt: SIGTERM to the group, SIGKILL once the script is
# gone or GRACE tenths of a second have passed. The private directory,
# which holds secrets, goes before the SIGKILL that ends this shell too.
stop() {
	trap "" TERM
	kill -TERM 0
	i=0
	while [ "$i" -lt "$g" ] && kill -0 "$p"; do
		sleep 0.1
		i=$((i + 1))
	done
	rm -rf -- "$d"
	kill -KILL 0
}
# The watchdog reads the controller: heartbeats, or stop. An asynchronous
# list reads /dev/null unless told otherwise, so stdin goes through fd 3.
# Its timer ends the attempt when no heartbeat came for HBWAIT seconds: the
# controller is gone without a word (a partition). The timer sleeps a
# second at a time and ends once the private directory is gone, so that
# no process of a finished attempt outlives it by more than a second.
exec 3<&0
(
	trap "" TERM
	echo h >"$d/beat"
	(
		trap "" TERM
		i=0
		while sleep 1; do
			[ -d "$d" ] || exit 0
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
t=
[ -f "$d/timer" ] && read -r t <"$d/timer"
kill -KILL "$w" $t 2>/dev/null
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
