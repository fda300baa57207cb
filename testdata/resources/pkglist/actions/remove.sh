# Forgets the package.
set -eu
dir=$SOLAR_INPUT_DIR name=$SOLAR_INPUT_NAME
if [ -f "$dir/installed" ]; then
	grep -vxF "$name" "$dir/installed" >"$dir/installed.new" || true
	mv "$dir/installed.new" "$dir/installed"
fi
