# The solar remote wrapper: runs one attempt of an action script on a node.
# It is the whole command of an SSH session (run by /bin/sh -c); nothing in
# it comes from the operator. Everything variable arrives on stdin:
#   line 1: VERSION NONCE BASE GRACE HBWAIT ENVLEN RESULTMAX
#   then ENVLEN bytes of shell assignments, every value single-quoted,
#   then one "h" per heartbeat; "s" or the end of stdin stops the attempt.
# It must stay free of single quotes: it travels inside them.
umask 077
IFS=" " read -r v n h g hb len lim || exit 97
if [ "$v" != 1 ]; then
	echo "solar-wrapper: protocol version $v is not supported by this wrapper" >&2
	exit 97
fi
b=${XDG_CACHE_HOME:-$HOME/.cache}/solar/bases/$h
if [ ! -d "$b" ]; then
	printf "\n%s nobase\n" "$n"
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
# timeout 0 never times out; it is here because it puts itself and the
# script in a process group of their own, which the watchdog can kill
# without killing this shell.
timeout 0 /bin/sh "$s" </dev/null &
p=$!
# The watchdog ends the attempt process group when the controller says stop, goes
# away (stdin closes) or falls silent (no heartbeat for HBWAIT seconds).
(
	while :; do
		x=
		if timeout "$hb" head -c 1 >"$d/hb"; then
			read -r x <"$d/hb" || :
		fi
		[ "$x" = h ] || break
	done
	: >"$d/stopping"
	kill -TERM -"$p"
	i=0
	while [ "$i" -lt "$g" ] && kill -0 -"$p"; do
		sleep 0.1
		i=$((i + 1))
	done
	kill -KILL -"$p"
) >/dev/null 2>&1 &
w=$!
wait "$p"
c=$?
if [ -e "$d/stopping" ]; then
	wait "$w"
else
	kill "$w" 2>/dev/null
fi
trap "" PIPE
printf "\n%s exit %s " "$n" "$c"
if [ -f "$d/result.json" ]; then
	printf "result\n"
	head -c "$((lim + 1))" "$d/result.json"
	printf "\n%s.\n" "$n"
elif [ -e "$d/result.json" ]; then
	printf "odd\n"
else
	printf "none\n"
fi
