# The fake package manager: pm.sh DIR install NAME... appends one line per
# call to DIR/pm.log and each NAME not yet installed to DIR/installed.
set -eu
dir=$1 verb=$2
shift 2
mkdir -p "$dir"
echo "$verb $*" >>"$dir/pm.log"
touch "$dir/installed"
for name in "$@"; do
	grep -qxF "$name" "$dir/installed" || echo "$name" >>"$dir/installed"
done
