# pm.sh: the fake package manager, run as `sh pm.sh DIR VERB NAME...`.
#
# install adds each NAME not yet there to DIR/installed, one a line; remove
# takes each out. Every call, whatever its outcome, is one line "VERB
# NAME..." of DIR/pm.log: the tests count calls there. Like a real package
# manager's transaction a call is all or nothing: one NAME listed in
# $PM_FAIL (space-separated) fails the whole call, which then changes no
# list and exits 1.
set -eu
dir=$1 verb=$2
shift 2
case $verb in
install | remove) ;;
*)
	echo "pm: unknown verb '$verb' (want install or remove)" >&2
	exit 2
	;;
esac
mkdir -p "$dir"
echo "$verb $*" >>"$dir/pm.log"
for name in "$@"; do
	case " ${PM_FAIL:-} " in
	*" $name "*)
		echo "pm: package $name failed to $verb; nothing changed" >&2
		exit 1
		;;
	esac
done
touch "$dir/installed"
for name in "$@"; do
	if [ "$verb" = install ]; then
		grep -qxF -- "$name" "$dir/installed" || echo "$name" >>"$dir/installed"
	else
		grep -vxF -- "$name" "$dir/installed" >"$dir/installed.new" || true
		mv -f "$dir/installed.new" "$dir/installed"
	fi
done
