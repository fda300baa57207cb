# lib.sh: helpers for this base's action scripts (sourced, never run).
#
# Every shell base carries its own identical copy, so that a base directory is
# self-contained: a handler may one day ship it to a remote node as it is.
# POSIX sh only (dash), no tools beyond coreutils, sed, grep and awk.
#
# Secrets travel only through variables and shell builtins (printf, test),
# never through a command line, so they cannot show up in another process's
# argv, and nothing here echoes an input value except in error messages about
# non-sensitive inputs.
#
# Check mode (SOLAR_CHECK=1, from solar orch check): a script must change
# nothing at all and only report whether a real run would change something.
# The helpers below honour it: they compare instead of writing and set
# changed=1 where a real run would write, and solar_done writes the result
# file only. A script that writes anything itself tests $solar_check first.
#
# Drift (solar drift runs these checks with the committed inputs): a check
# also says what differs. Each difference is one line on stdout naming the
# file and the aspect ("my.cnf: content differs (bind-address)", "root.cnf:
# mode 0644, want 0600", "my.cnf: missing"), and its aspect's name goes in
# the result's "changes": content, mode or missing (solar_differ). Contents
# are never printed: at most the names of the settings whose wanted line is
# not in the file, and only where the caller allows it (solar_put ... keys).

set -eu
umask 077

nl='
'

# solar_check is 1 in check mode, 0 otherwise. Only the exact value 1 counts.
solar_check=0
[ "${SOLAR_CHECK:-}" != 1 ] || solar_check=1

# solar_init checks the protocol environment and makes the resource's own
# directory, $work = $SOLAR_INPUT_DIR/$SOLAR_RESOURCE. A relative dir is refused:
# the working directory is the base itself, which must never be written to.
# In check mode $work is not made: the helpers find what it would hold missing.
solar_init() {
	work=
	changed=0
	changes=
	SOLAR_RESOURCE=${SOLAR_RESOURCE:-}
	SOLAR_ACTION=${SOLAR_ACTION:-$(basename "$0" .sh)}
	[ -n "$SOLAR_RESOURCE" ] || solar_die "SOLAR_RESOURCE is not set; run this script through solar"
	SOLAR_TASK=${SOLAR_TASK:-$SOLAR_RESOURCE.$SOLAR_ACTION}
	case $SOLAR_RESOURCE in
	*/* | . | ..) solar_die "resource name '$SOLAR_RESOURCE' cannot name a directory" ;;
	esac
	dir=${SOLAR_INPUT_DIR:-}
	case $dir in
	/*) ;;
	'') solar_die "input dir is empty: set it to an absolute directory" ;;
	*) solar_die "input dir must be an absolute path, got '$dir'" ;;
	esac
	work=$dir/$SOLAR_RESOURCE
	[ -d "$work" ] || [ "$solar_check" = 1 ] || mkdir -p "$work"
}

# solar_die MESSAGE logs the failure for the tests that count attempts and
# exits non-zero; the executor shows the tail of stderr as the task's error.
# A check is no attempt: it logs nothing.
solar_die() {
	printf '%s %s: %s\n' "${SOLAR_RESOURCE:-?}" "${SOLAR_ACTION:-?}" "$1" >&2
	if [ "$solar_check" != 1 ] && [ -n "${work:-}" ] && [ -d "$work" ]; then
		printf '%s %s failed\n' "$SOLAR_TASK" "$SOLAR_ACTION" >>"$work/actions.log"
	fi
	exit 1
}

# solar_int NAME VALUE DEFAULT sets $int to VALUE, or DEFAULT when VALUE is
# empty or null, after checking it is a whole number.
solar_int() {
	int=$2
	case $int in '' | null) int=$3 ;; esac
	case $int in
	'' | *[!0-9]*) solar_die "input $1 must be a whole number, got '$2'" ;;
	esac
}

# solar_port NAME VALUE DEFAULT is solar_int limited to 1..65535.
solar_port() {
	solar_int "$@"
	if [ "${#int}" -gt 5 ] || [ "$int" -lt 1 ] || [ "$int" -gt 65535 ]; then
		solar_die "input $1 must be a port number (1-65535), got '$2'"
	fi
}

# solar_put PATH MODE CONTENT [keys] installs CONTENT byte for byte as PATH
# with MODE. A file that already has that content is left untouched (only its
# mode is fixed if it drifted), so an unchanged run changes nothing on disk.
# Sets changed=1 when it wrote. The temp file in the same directory makes the
# replacement atomic. In check mode it writes nothing and reports each
# difference (solar_differ), comparing CONTENT through a pipe from the printf
# builtin (no temp file, and no secret on a command line). With keys, a
# content difference names the settings that differ (solar_keys): give it
# only for files whose setting names are no secret, never for free content.
# $solar_show, when set, is how the file is named in those reports.
solar_put() {
	if [ "$solar_check" = 1 ]; then
		_show=${solar_show:-$(solar_rel "$1")}
		if [ ! -e "$1" ]; then
			solar_differ missing "$_show: missing"
			return 0
		fi
		if [ ! -f "$1" ]; then
			solar_differ content "$_show: not a regular file"
			return 0
		fi
		if [ ! -r "$1" ]; then
			solar_differ content "$_show: content cannot be read"
		elif ! printf '%s' "$3" | cmp -s - "$1"; then
			_keys=
			[ "${4:-}" != keys ] || _keys=$(printf '%s' "$3" | solar_keys "$1")
			solar_differ content "$_show: content differs${_keys:+ ($_keys)}"
		fi
		solar_mode_is "$1" "$2" ||
			solar_differ mode "$_show: mode $(solar_mode4 "$(stat -c %a "$1")"), want $(solar_mode4 "$2")"
		return 0
	fi
	_parent=${1%/*}
	[ -d "$_parent" ] || mkdir -p "$_parent"
	_tmp=$1.solar-tmp.$$
	printf '%s' "$3" >"$_tmp"
	if [ -f "$1" ] && cmp -s "$_tmp" "$1"; then
		rm -f "$_tmp"
		if ! solar_mode_is "$1" "$2"; then
			chmod "$2" "$1"
			changed=1
		fi
		return 0
	fi
	chmod "$2" "$_tmp"
	mv -f "$_tmp" "$1"
	changed=1
}

# solar_differ NAME LINE records a difference a check found: LINE goes to
# stdout (it must hold no secret) and NAME, once, to $changes, which
# solar_done writes as the result's "changes". Sets changed=1.
solar_differ() {
	changed=1
	printf '%s\n' "$2"
	case " $changes " in
	*" $1 "*) ;;
	*) changes="${changes:+$changes }$1" ;;
	esac
}

# solar_rel PATH prints PATH relative to the resource's directory, or else to
# dir, as the reports name files.
solar_rel() {
	case $1 in
	"$work"/*) printf '%s\n' "${1#"$work"/}" ;;
	"$dir"/*) printf '%s\n' "${1#"$dir"/}" ;;
	*) printf '%s\n' "$1" ;;
	esac
}

# solar_mode4 MODE prints the octal MODE with four digits (600 -> 0600).
solar_mode4() {
	_m=$1
	while [ "${_m#0}" != "$_m" ] && [ -n "${_m#0}" ]; do _m=${_m#0}; done
	while [ "${#_m}" -lt 4 ]; do _m=0$_m; done
	printf '%s\n' "$_m"
}

# solar_keys FILE reads the wanted content on stdin and prints, comma
# separated, the names of the settings ("name = value" or "name value" lines)
# whose wanted line is not in FILE. Names come from the wanted lines only, so
# whatever was written into FILE by hand is never echoed.
solar_keys() {
	awk '
	FILENAME != "-" { have[$0] = 1; next }
	($0 in have) { next }
	{
		k = ""
		if (match($0, /^[ \t]*[A-Za-z0-9_.-]+[ \t]*=/)) k = substr($0, RSTART, RLENGTH - 1)
		else if (match($0, /^[ \t]*[A-Za-z0-9_.-]+[ \t]/)) k = substr($0, RSTART, RLENGTH - 1)
		gsub(/[ \t]/, "", k)
		if (k == "" || (k in seen)) next
		seen[k] = 1
		out = out (out == "" ? "" : ", ") k
	}
	END { if (out != "") print out }' "$1" -
}

# solar_mode_is PATH MODE reports whether PATH has the octal MODE. stat
# prints 640 for 0640: compare without the leading zeros.
solar_mode_is() {
	_want=$2
	while [ "${_want#0}" != "$_want" ] && [ -n "${_want#0}" ]; do _want=${_want#0}; done
	[ "$(stat -c %a "$1")" = "$_want" ]
}

# solar_mkdir PATH makes a directory, setting changed=1 if it was missing (in
# check mode it only reports it missing).
solar_mkdir() {
	if [ ! -d "$1" ]; then
		if [ "$solar_check" = 1 ]; then
			solar_differ missing "$(solar_rel "$1")/: missing"
			return 0
		fi
		mkdir -p "$1"
		changed=1
	fi
}

# solar_wipe empties the resource's directory but keeps actions.log: the
# tests count every action, removes included, across the resource's life.
# In check mode it only sets changed=1 if there is something to delete.
solar_wipe() {
	for _e in "$work"/* "$work"/.[!.]* "$work"/..?*; do
		[ -e "$_e" ] || [ -L "$_e" ] || continue
		[ "$_e" != "$work/actions.log" ] || continue
		[ "$solar_check" = 1 ] || rm -rf "$_e"
		changed=1
	done
}

# solar_strings reads a JSON array of strings on stdin and prints one element
# a line. null or nothing is the empty list. Escapes \" \\ \/ \t are decoded;
# \uXXXX is kept as written. An element holding a line break, or anything that
# is not an array of strings, is an error (exit 2, reason on stderr).
solar_strings() {
	awk '
	function bad(why) { printf "%s at character %d\n", why, i > "/dev/stderr"; failed = 1; exit 2 }
	function skip() { while (i <= n && index(" \t\r\n", substr(s, i, 1)) > 0) i++ }
	function str(   out, c, e) {
		out = ""
		i++
		while (i <= n) {
			c = substr(s, i, 1)
			if (c == "\"") { i++; return out }
			if (c == "\\") {
				e = substr(s, i + 1, 1)
				i += 2
				if (e == "t") out = out "\t"
				else if (e == "u") out = out "\\u"
				else if (e == "\"" || e == "\\" || e == "/") out = out e
				else if (e == "n" || e == "r") bad("line break in element")
				else bad("unknown escape \\" e)
				continue
			}
			out = out c
			i++
		}
		bad("unterminated string")
	}
	{ s = s $0 "\n" }
	END {
		if (failed) exit 2
		n = length(s)
		i = 1
		skip()
		if (i > n || substr(s, i, 4) == "null") exit 0
		if (substr(s, i, 1) != "[") bad("want a JSON list")
		i++
		skip()
		if (substr(s, i, 1) == "]") { i++; skip(); if (i <= n) bad("trailing text"); exit 0 }
		for (;;) {
			if (substr(s, i, 1) != "\"") bad("want a string")
			print str()
			skip()
			c = substr(s, i, 1)
			i++
			if (c == "]") break
			if (c != ",") bad("want , or ]")
			skip()
		}
		skip()
		if (i <= n) bad("trailing text")
	}'
}

# solar_done [OUTPUTS_JSON] reports the outcome: one line in actions.log
# ("<task> <action> changed|ok", which the tests count) and the result file
# the executor reads. OUTPUTS_JSON, when given, is a JSON object. In check mode
# only the result file is written, and without outputs: a check stores
# nothing, and its "changed" is the prediction, with "changes" when a
# difference was named (solar_differ).
solar_done() {
	if [ "$changed" = 1 ]; then
		_state=changed _bool=true
	else
		_state=ok _bool=false
	fi
	[ "$solar_check" = 1 ] || printf '%s %s %s\n' "$SOLAR_TASK" "$SOLAR_ACTION" "$_state" >>"$work/actions.log"
	[ -n "${SOLAR_RESULT:-}" ] || return 0
	if [ $# -gt 0 ] && [ "$solar_check" != 1 ]; then
		printf '{"changed": %s, "outputs": %s}\n' "$_bool" "$1" >"$SOLAR_RESULT"
	elif [ "$solar_check" = 1 ] && [ -n "$changes" ]; then
		# The names are solar_differ's own words: no quoting needed.
		printf '{"changed": %s, "changes": ["%s"]}\n' "$_bool" "$(printf '%s' "$changes" | sed 's/ /", "/g')" >"$SOLAR_RESULT"
	else
		printf '{"changed": %s}\n' "$_bool" >"$SOLAR_RESULT"
	fi
}
