# Installs every member's package with ONE call of the package manager per
# dir. $SOLAR_BATCH is the batch's document (compact JSON, one member per
# {"resource": ...}); the result names every member.
set -eu
# One line per member: resource, name, dir, fail, tab-separated.
members=$(sed 's/{"resource":/\
{"resource":/g' "$SOLAR_BATCH" | grep '^{"resource":' | while IFS= read -r m; do
	field() { printf '%s' "$m" | sed -n "s/.*\"$1\":\"\\([^\"]*\\)\".*/\\1/p"; }
	fail=$(printf '%s' "$m" | sed -n 's/.*"fail":\(true\).*/\1/p')
	printf '%s\t%s\t%s\t%s\n' "$(field resource)" "$(field name)" "$(field dir)" "${fail:-false}"
done)
tab=$(printf '\t')
result='' dirs=''
# What each member changes is known before the call.
while IFS="$tab" read -r res name dir fail; do
	if [ "$fail" = true ]; then
		result="$result\"$res\": {\"failed\": true, \"error\": \"package $name failed to install\"}, "
		continue
	fi
	changed=true
	if [ -f "$dir/installed" ] && grep -qxF "$name" "$dir/installed"; then
		changed=false
	fi
	result="$result\"$res\": {\"changed\": $changed}, "
	case " $dirs " in *" $dir "*) ;; *) dirs="$dirs $dir" ;; esac
done <<MEMBERS
$members
MEMBERS
for dir in $dirs; do
	names=$(printf '%s\n' "$members" | awk -F "$tab" -v d="$dir" '$3 == d && $4 != "true" { printf "%s ", $2 }')
	# shellcheck disable=SC2086 # one word per package
	sh actions/pm.sh "$dir" install $names
	echo "installed $names"
done
printf '{"members": {%s}}\n' "${result%, }" >"$SOLAR_RESULT"
