#!/bin/sh
# pkglist remove: take the package out of <dir>/installed with one call of
# the fake package manager; "ok", and no call, when it is not there.
case $0 in */*) here=${0%/*} ;; *) here=. ;; esac
. "$here/lib.sh"
solar_init
. "$here/pkg.sh"

name=${SOLAR_INPUT_NAME:-}
why=$(pkg_name_error "$name")
[ -z "$why" ] || solar_die "$why"

if pkg_installed "$dir" "$name"; then
	if [ "$solar_check" != 1 ]; then
		sh "$here/pm.sh" "$dir" remove "$name" || solar_die "package $name failed to remove"
		echo "removed $name"
	fi
	changed=1
fi
solar_wipe
solar_done
