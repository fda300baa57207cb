#!/bin/sh
# pkglist's batch script for run: installs the packages of every member not
# yet installed with ONE call of the package manager per dir, as a real
# package manager's one transaction would, and reports each member's own
# outcome (docs/bases.md, "Batch scripts"). $SOLAR_BATCH is the batch's
# document, compact JSON with one {"resource": ...} per member. Each member
# gets its line in <dir>/<resource>/actions.log, as its run.sh would write.
case $0 in */*) here=${0%/*} ;; *) here=. ;; esac
. "$here/lib.sh"
. "$here/pkg.sh"

if [ "$solar_check" = 1 ]; then
	# solar checks every task alone (docs/bases.md): refuse, writing nothing.
	echo "pkglist batch: a batch never runs in check mode; check each member with run.sh" >&2
	exit 1
fi
[ -n "${SOLAR_BATCH:-}" ] || {
	echo "pkglist batch: SOLAR_BATCH is not set; run this script through solar" >&2
	exit 1
}
tab=$(printf '\t')

# One line per member: resource, task, name, dir, fail, tab-separated. Values
# are read up to the first quote: a name cannot hold one (pkg_name_error),
# and a dir that does fails as not absolute or not found.
members=$(sed 's/{"resource":/\
{"resource":/g' "$SOLAR_BATCH" | grep '^{"resource":' | while IFS= read -r m; do
	field() { printf '%s' "$m" | sed -n "s/.*\"$1\":\"\\([^\"]*\\)\".*/\\1/p"; }
	case $m in *'"fail":true'*) fail=true ;; *) fail=false ;; esac
	printf '%s\t%s\t%s\t%s\t%s\n' "$(field resource)" "$(field task)" "$(field name)" "$(field dir)" "$fail"
done)

# member_error RESOURCE NAME DIR FAIL prints why the member cannot be
# installed, nothing if it can.
member_error() {
	case $1 in
	'' | */* | . | ..) echo "resource name '$1' cannot name a directory" ;;
	esac
	pkg_name_error "$2"
	case $3 in
	/*) ;;
	*) echo "input dir must be an absolute path, got '$3'" ;;
	esac
	[ "$4" != true ] || echo "package $2 failed to install"
}

# What each member needs is known before any call: state is install, ok, or
# the reason it fails.
states=
while IFS="$tab" read -r res task name dir fail; do
	[ -n "$res$task" ] || continue
	why=$(member_error "$res" "$name" "$dir" "$fail" | head -n 1)
	if [ -n "$why" ]; then
		state=$why
	elif pkg_installed "$dir" "$name"; then
		state=ok
	else
		state=install
	fi
	states="$states$res$tab$task$tab$name$tab$dir$tab$state$nl"
done <<MEMBERS
$members
MEMBERS

# One call per dir; a call that fails fails each of its members.
failed_dirs=
dirs=$(printf '%s' "$states" | awk -F "$tab" '$5 == "install" { print $4 }' | sort -u)
while IFS= read -r d; do
	[ -n "$d" ] || continue
	names=$(printf '%s' "$states" | awk -F "$tab" -v d="$d" '$4 == d && $5 == "install" { printf "%s ", $3 }')
	# shellcheck disable=SC2086 # one word per package (pkg_name_error)
	if sh "$here/pm.sh" "$d" install $names; then
		echo "installed $names"
	else
		failed_dirs="$failed_dirs$d$nl"
	fi
done <<DIRS
$dirs
DIRS

# json_str TEXT prints TEXT as the inside of a JSON string.
json_str() {
	printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g'
}

result=
while IFS="$tab" read -r res task name dir state; do
	[ -n "$res$task" ] || continue
	if [ "$state" = install ]; then
		case $nl$failed_dirs in
		*"$nl$dir$nl"*) state="package manager failed to install $name" ;;
		esac
	fi
	case $state in
	install) outcome=changed member='{"changed": true}' ;;
	ok) outcome=ok member='{"changed": false}' ;;
	*) outcome=failed member="{\"failed\": true, \"error\": \"$(json_str "$state")\"}" ;;
	esac
	result="$result\"$(json_str "$res")\": $member, "
	# As solar_die would, unless there is no place for the log.
	case $res in
	'' | */* | . | ..) ;;
	*)
		case $dir in
		/*)
			mkdir -p "$dir/$res"
			printf '%s %s %s\n' "$task" "${SOLAR_ACTION:-run}" "$outcome" >>"$dir/$res/actions.log"
			;;
		esac
		;;
	esac
done <<STATES
$states
STATES
printf '{"members": {%s}}\n' "${result%, }" >"$SOLAR_RESULT"
