#!/bin/sh
# fail run (and update): count this attempt; fail while the count is at most
# fail_times, then converge the marker file ("ok" when it already holds marker).
# The attempts file is bookkeeping, not part of the result: a run that only
# counts reports "ok".
case $0 in */*) . "${0%/*}/lib.sh" ;; *) . ./lib.sh ;; esac
solar_init

solar_int fail_times "${SOLAR_INPUT_FAIL_TIMES:-}" 0
attempts=0
[ ! -f "$work/attempts" ] || read -r attempts <"$work/attempts" || :
case $attempts in '' | *[!0-9]*) attempts=0 ;; esac
attempts=$((attempts + 1))
# A check is no attempt: it counts nothing, and fails only when the next real
# attempt would, so a test can see a check fail with a bundled base.
if [ "$solar_check" = 1 ]; then
	[ "$attempts" -gt "$int" ] || solar_die "failing as asked (check of attempt $attempts)"
else
	printf '%s\n' "$attempts" >"$work/attempts"
	[ "$attempts" -gt "$int" ] || solar_die "failing as asked (attempt $attempts)"
fi

marker=${SOLAR_INPUT_MARKER-x}
solar_put "$work/marker" 0644 "$marker
"
solar_done
