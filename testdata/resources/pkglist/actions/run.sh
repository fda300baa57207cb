#!/bin/sh
# pkglist run (and update): install the package with one call of the fake
# package manager, unless <dir>/installed lists it already. fail: true makes
# the call fail, and a check of it too, as a real attempt would.
case $0 in */*) here=${0%/*} ;; *) here=. ;; esac
. "$here/lib.sh"
solar_init
. "$here/pkg.sh"

name=${SOLAR_INPUT_NAME:-}
fail=${SOLAR_INPUT_FAIL:-false}
why=$(pkg_name_error "$name")$(pkg_fail_error "$fail")
[ -z "$why" ] || solar_die "$why"

if [ "$solar_check" = 1 ]; then
	[ "$fail" != true ] || solar_die "package $name would fail to install"
	pkg_installed "$dir" "$name" || solar_differ missing "package $name: not installed"
elif [ "$fail" = true ] || ! pkg_installed "$dir" "$name"; then
	pm_fail=
	[ "$fail" != true ] || pm_fail=$name
	PM_FAIL=$pm_fail sh "$here/pm.sh" "$dir" install "$name" || solar_die "package $name failed to install"
	echo "installed $name"
	changed=1
fi
solar_done
