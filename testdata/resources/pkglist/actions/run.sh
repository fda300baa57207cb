# Installs one package with one call of the package manager.
set -eu
dir=$SOLAR_INPUT_DIR name=$SOLAR_INPUT_NAME
changed=true
if [ -f "$dir/installed" ] && grep -qxF "$name" "$dir/installed"; then
	changed=false
fi
sh actions/pm.sh "$dir" install "$name"
if [ "$SOLAR_INPUT_FAIL" = true ]; then
	echo "package $name failed to install" >&2
	exit 1
fi
echo "installed $name"
printf '{"changed": %s}\n' "$changed" >"$SOLAR_RESULT"
