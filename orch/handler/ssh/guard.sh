# The solar guard: one per SSH connection, for as long as the connection
# lasts. It watches the attempts the connection's sessions start
# (wrapper.sh), which register in its private directory DIR, and does
# for them what a process per attempt would otherwise do:
# - it stops an attempt when the controller asks (SIGTERM to its group,
#   its grace, its files with their secrets removed, SIGKILL);
# - it stops every attempt still running when the controller goes away
#   (the end of stdin) or falls silent (no heartbeat for HBWAIT seconds:
#   a partition), removes DIR and ends;
# - once an attempt's session has ended, it marks its record done,
#   erases its inputs and reports its result file; what ended attempts
#   leave is removed in batches.
# It starts by sweeping what attempts and uploads that died left (sweep).
# stdin: line 1: VERSION CONN HBWAIT, then one command per line:
#   h         a heartbeat
#   e NONCE   the session of attempt NONCE has ended: report its result
#   s NONCE   stop attempt NONCE
# stdout: "ready BOOTID SHELL DIR" (SHELL the name of the login shell, or
# "-"), then one report per e, behind RS NONCE " ":
#   none | odd | result, the content and NONCE "." on a line of its own.
# It must stay free of single quotes: it travels inside them.
umask 077
IFS=" " read -r v cn hb || exit 97
if [ "$v" != 3 ]; then
	echo "solar-guard: protocol version $v is not supported by this guard" >&2
	exit 97
fi
case $cn:$hb in *[!0-9a-f:]* | :* | *:) exit 97 ;; esac
c=${XDG_CACHE_HOME:-$HOME/.cache}/solar
r=$c/bases
R=$c/running

# dead FILE: the attempt whose record (see wrapper.sh) is FILE is gone, as
# the wrapper would judge it, and more: the record names no process
# (unreadable, or of another boot), or its shell has ended and no live
# process of its group started in the time of the attempt: from the start
# of its shell to a second after its stop killed the group (KEY.end), or
# since then when no stop noted it. So the group of a finished attempt
# that still has members (a service its script left) keeps its record
# too. It leaves the fields of the record in st rg rp rs rb rd.
dead() {
	q=$1 st= rg= rp= rs= rb= rd=
	{ read -r st rg rp rs rb rd <"$q"; } 2>/dev/null || return 0
	case $st in run | done) ;; *) return 0 ;; esac
	case $rg:$rp:$rs in *[!0-9:]* | :* | *::* | *:) return 0 ;; esac
	[ "$bt" = - ] || [ "$rb" = "$bt" ] || return 0
	gone "$rp" "$rs" "$rg" "${q%%.*}.end"
}

# drop FILE removes the record FILE once dead has judged it, with the note
# of its stop. It takes the record away by a rename first, as an attempt
# that settles it does: had a new attempt of its KEY put a record of its
# own there since (it found the old one gone too), the record taken is
# not the one judged, and it is put back (or, should yet another record
# be there by then, left under the name taken, for a later sweep).
drop() {
	m=${1%%.*}.x$$
	mv -f "$1" "$m" 2>/dev/null || return 0
	xs= xg= xp= xr= xb= xd=
	{ read -r xs xg xp xr xb xd <"$m"; } 2>/dev/null
	if [ "$xs $xg $xp $xr $xb $xd" != "$st $rg $rp $rs $rb $rd" ]; then
		ln "$m" "$1" 2>/dev/null && rm -f "$m"
		return 0
	fi
	e=${1%%.*}.end
	if { read -r ge eg ep es el <"$e"; } 2>/dev/null && [ "$eg $ep $es" = "$rg $rp $rs" ]; then
		rm -f "$m" "$e"
	else
		rm -f "$m"
	fi
}

# sweep removes what attempts and uploads that died left on the node:
# - the private directories of attempts whose wrapper is gone;
# - once more than an hour old (what is under way is younger, and records
#   in the making are spared): uploads cut short (.upload-HASH.PID.*)
#   whose setup shell is gone, records of attempts that are gone (dead),
#   and notes of stops (KEY.end) left with no record of their KEY.
# With nothing left over it costs no process; otherwise one find.
sweep() {
	for t in "$XDG_RUNTIME_DIR" /dev/shm "${TMPDIR:-/tmp}"; do
		[ -n "$t" ] || continue
		for d in "$t"/solar-*-*; do
			[ -d "$d" ] && [ -O "$d" ] || continue
			p=${d##*/solar-}
			p=${p%%-*}
			case $p in *[!0-9]* | "") continue ;; esac
			kill -0 "$p" 2>/dev/null || rm -rf -- "$d"
		done
	done
	for f in "$r"/.upload-* "$R"/*; do
		[ -e "$f" ] && break
	done
	[ -e "$f" ] && cd "$c" >/dev/null || return 0
	set -f
	set -- $(find bases running -mindepth 1 -maxdepth 1 -mmin +60 \( -name ".upload-*" -o -path "running/*" \) -print 2>/dev/null)
	set +f
	bt=-
	[ $# -eq 0 ] || { read -r bt </proc/sys/kernel/random/boot_id; } 2>/dev/null
	for f do
		case $f in
		bases/.upload-*)
			# The pid of the shell that unpacks it is in its name (not in
			# older names): while that lives, it may yet rename it into
			# place.
			p=${f#*/.upload-*.}
			p=${p%%.*}
			case $p in *[!0-9]* | "") ;; *) kill -0 "$p" 2>/dev/null && continue ;; esac
			chmod -R u+w "$f" 2>/dev/null
			rm -rf -- "$f"
			;;
		running/*.end) ;;
		running/*)
			# dead takes f for its own (gone's loop).
			y=$f
			dead "$y" && drop "$y"
			;;
		esac
	done
	for f do
		case $f in running/*.end) ;; *) continue ;; esac
		k=${f%.end}
		o=1
		for x in "$k" "$k".*; do
			[ "$x" = "$f" ] || [ ! -e "$x" ] || o=
		done
		[ -z "$o" ] || rm -f "$f"
	done
}

m=
for x in tar head mkdir mktemp mv chmod rm sleep ln; do
	command -v "$x" >/dev/null 2>&1 || m="$m, $x"
done
if [ -n "$m" ]; then
	echo "solar-guard: lacks commands actions need: ${m#, } (install coreutils and tar, on the PATH of the login)" >&2
	exit 98
fi
sweep
bt=-
{ read -r bt </proc/sys/kernel/random/boot_id; } 2>/dev/null
D=
for t in "$XDG_RUNTIME_DIR" /dev/shm "${TMPDIR:-/tmp}"; do
	if [ -n "$t" ] && [ -d "$t" ] && [ -w "$t" ] && mkdir "$t/solar-$$-$cn" 2>/dev/null; then
		D=$t/solar-$$-$cn
		break
	fi
done
if [ -z "$D" ]; then
	echo "solar-guard: cannot make a private directory in \$XDG_RUNTIME_DIR, /dev/shm or \$TMPDIR" >&2
	exit 98
fi
cd "$D" || exit 98

# stopone NONCE [force] stops attempt NONCE once (force: even if a stop
# of it is under way, which die may have to outlive): SIGTERM to its group, then,
# once its first process is gone or its grace has passed, its files go
# (they hold secrets), a note in K.end says when the group was killed (see
# gone), and SIGKILL. An attempt whose registration is empty has ended.
stopone() {
	set -C
	if ! { : >"$1.stopping"; } 2>/dev/null && [ "$2" != force ]; then
		set +C
		return 0
	fi
	set +C
	pg= pp= ps= g= k=
	{ read -r pg pp ps g k <"$1.pid"; } 2>/dev/null
	[ -n "$k" ] || return 0
	if ! gone "$pp" "$ps" "$pg"; then
		kill -s TERM -- "-$pg" 2>/dev/null
		i=0
		while [ "$i" -lt "$g" ] && ! gone "$pp" "$ps"; do
			sleep 0.1
			i=$((i + 1))
		done
	fi
	rm -f -- "$1.inputs.json" "$1.result.json"
	if [ "$k" != - ]; then
		now
		printf "%s %s %s %s %s %s\n" "$ct" "$pg" "$pp" "$ps" "$bt" "$D/$1" >"$R/$k.end"
	fi
	gone "$pp" "$ps" "$pg" || kill -s KILL -- "-$pg" 2>/dev/null
}

# fin NONCE: the session of attempt NONCE has ended. Its registration is
# emptied (the guard stops nothing of it any more), its inputs erased,
# its record marked done, its result reported, and its names kept for
# the next tidy.
qf= qk= nq=0
fin() {
	f=$1
	pg= pp= ps= g= k=
	{ read -r pg pp ps g k <"$f.pid"; } 2>/dev/null
	[ ! -f "$f.pid" ] || : >"$f.pid"
	[ ! -f "$f.inputs.json" ] || : >"$f.inputs.json"
	if [ -n "$k" ] && [ "$k" != - ]; then
		x=
		{ read -r x <"$R/$k"; } 2>/dev/null
		if [ "$x" = "run $pg $pp $ps $bt $D/$f" ]; then
			printf "done %s\n" "${x#run }" >"$R/$k"
			qk="$qk $k"
		fi
	fi
	qf="$qf $f"
	nq=$((nq + 1))
	printf "\036%s " "$f"
	if [ -f "$f.result.json" ]; then
		printf "result\n"
		if [ -s "$f.result.json" ]; then
			head -c 16777217 "$f.result.json"
			: >"$f.result.json"
		fi
		printf "\n%s.\n" "$f"
	elif [ -e "$f.result.json" ]; then
		printf "odd\n"
	else
		printf "none\n"
	fi
	[ "$nq" -lt 64 ] || tidy
}

# tidy removes what the attempts fin saw left: their files, and their
# records still marked done by them, each taken away by a rename (as an
# attempt settling it would); a record another attempt put under the name
# in the meantime is put back.
tidy() {
	rs= m=
	for w in $qf; do
		rs="$rs $w.pid $w.inputs.json $w.result.json $w.stopping"
	done
	for w in $qk; do
		st= rest=
		{ read -r st rest <"$R/$w"; } 2>/dev/null
		case $st:$rest in done:*" $D/"*) m="$m $R/$w" ;; esac
	done
	qf= qk= nq=0
	if [ -n "$m" ]; then
		mkdir -p k && mv -f -- $m k/ 2>/dev/null
		for x in k/*; do
			[ -e "$x" ] || continue
			st= rest=
			{ read -r st rest <"$x"; } 2>/dev/null
			case $st:$rest in done:*" $D/"*) ;; *) ln "$x" "$R/${x#k/}" 2>/dev/null ;; esac
		done
		rs="$rs k"
	fi
	[ -z "$rs" ] || rm -rf -- $rs
}

# die stops every attempt still registered, and waits for the stops
# under way (sw, the reader's), tidies, removes DIR and ends the guard,
# once, whoever calls it first: the reader at the end of its stdin, or
# the timer (as "timer"), which then ends the reader too.
sw=
die() {
	set -C
	if ! { : >dead; } 2>/dev/null; then
		set +C
		exit 0
	fi
	set +C
	w=
	for f in *.pid; do
		if [ -s "$f" ]; then
			stopone "${f%.pid}" force &
			w="$w $!"
		fi
	done
	[ -z "$w$sw" ] || wait $w $sw 2>/dev/null
	tidy
	cd / && rm -rf -- "$D"
	if [ "$1" = timer ]; then
		kill -s TERM $$ 2>/dev/null
	else
		kill -s TERM "$tp" 2>/dev/null
	fi
	exit 0
}

# The timer: no heartbeat for HBWAIT seconds ends the guard, as its end
# of stdin would. Its sleep goes with it when the reader ends it.
echo h >beat
(
	z=
	trap "kill \$z 2>/dev/null; exit 0" TERM
	while :; do
		sleep "$hb" &
		z=$!
		wait "$z" || exit 0
		[ -e dead ] && exit 0
		[ -s beat ] || die timer
		: >beat
	done
) &
tp=$!
case ${SHELL:-} in /* ) sh=${SHELL##*/} ;; *) sh=- ;; esac
case $sh in *[!a-z0-9]* | "") sh=- ;; esac
echo "ready $bt $sh $D"
while IFS=" " read -r x a; do
	case $a in *[!0-9a-f]*) break ;; esac
	case $x:$a in
	h:) echo h >beat ;;
	e:?*) fin "$a" ;;
	s:?*)
		stopone "$a" &
		sw="$sw $!"
		;;
	*) break ;;
	esac
done
die
