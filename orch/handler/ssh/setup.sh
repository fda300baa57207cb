# The solar base upload on a node: unpacks the tar stream on stdin into
# the cache as the base BASE (a content hash, $1), into a new directory
# first, made read-only, then renamed into place, so an upload racing
# another one never leaves a half-written base. The guard (guard.sh) sweeps
# what uploads cut short leave.
# It must stay free of single quotes: it travels inside them.
umask 022
h=$1
c=${XDG_CACHE_HOME:-$HOME/.cache}/solar
r=$c/bases
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
