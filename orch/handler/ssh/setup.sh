# The solar base setup on a node, once per base and run: sweeps what
# attempts and uploads that died left behind (see sweep), then reports
# whether the base BASE (a content hash, $1) is in the cache. With
# "upload" as $2, it unpacks the tar stream on stdin into the cache
# instead: into a new directory first, made read-only, then renamed into
# place, so an upload racing another one never leaves a half-written base.
# It must stay free of single quotes: it travels inside them.
umask 022
h=$1
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
	if { read -r l </proc/"$rp"/stat; } 2>/dev/null; then
		l=${l##*) }
		set -- $l
		[ "${20}" != "$rs" ] || [ "$1" = Z ] || [ "$1" = X ] || return 1
	fi
	ge=
	if { read -r ge eg ep es el <"${q%%.*}.end"; } 2>/dev/null && [ "$eg $ep $es" = "$rg $rp $rs" ]; then
		# Checked: an error in arithmetic would end this shell.
		case $ge in "" | *[!0-9]*) ge= ;; *) ge=$((ge + 100)) ;; esac
	else
		ge=
	fi
	for s in /proc/[0-9]*/stat; do
		{ read -r l <"$s"; } 2>/dev/null || continue
		l=${l##*) }
		set -- $l
		if [ "$3" = "$rg" ] && [ "$1" != Z ] && [ "$1" != X ] && [ "${20}" -ge "$rs" ] &&
			{ [ -z "$ge" ] || [ "${20}" -le "$ge" ]; }; then
			return 1
		fi
	done
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
		running/*) dead "$f" && drop "$f" ;;
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

if [ "$2" != upload ]; then
	sweep
	if [ -d "$r/$h" ]; then echo have; else echo need; fi
	exit 0
fi
[ -d "$r/$h" ] && exit 0
mkdir -p "$r" || exit 1
# The name carries the pid of this shell: a sweep spares the directory
# while the shell lives, however long the upload takes.
t=$(mktemp -d "$r/.upload-$h.$$.XXXXXX") || exit 1
if ! tar -x -f - -C "$t" --no-same-owner --no-same-permissions 2>"$t.err"; then
	cat "$t.err" >&2
	rm -rf -- "$t" "$t.err"
	exit 1
fi
rm -f -- "$t.err"
chmod -R a-w "$t"
if ! mv -T "$t" "$r/$h" 2>/dev/null; then
	chmod -R u+w "$t"
	rm -rf -- "$t"
	[ -d "$r/$h" ] || exit 1
fi
