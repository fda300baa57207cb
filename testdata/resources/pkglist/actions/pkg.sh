# pkg.sh: sourced after lib.sh by this base's actions; helpers for the
# package list of a dir, which every pkglist resource on that dir shares
# (the resource's own directory keeps only its actions.log).

# pkg_name_error NAME prints why NAME is not a package name, nothing if it
# is one. A name is one word: the batch script passes names to pm.sh split
# on spaces, and a leading - would read as an option.
pkg_name_error() {
	case $1 in
	'') echo "input name is empty" ;;
	-* | *[!A-Za-z0-9+._-]*) echo "input name must be a package name (letters, digits, + . _ and -, not first), got '$1'" ;;
	esac
}

# pkg_fail_error VALUE prints why VALUE is not a value of the input fail.
pkg_fail_error() {
	case $1 in
	true | false) ;;
	*) echo "input fail must be true or false, got '$1'" ;;
	esac
}

# pkg_installed DIR NAME reports whether DIR's package list holds NAME.
pkg_installed() {
	[ -f "$1/installed" ] && grep -qxF -- "$2" "$1/installed"
}
