#!/bin/sh
# fail sleep: wait seconds in a child process. sleep.pids holds this shell's
# pid and the child's, one a line, written before waiting: after a timeout
# both must be gone, which holds only if the whole process group was killed.
case $0 in */*) . "${0%/*}/lib.sh" ;; *) . ./lib.sh ;; esac
solar_init

solar_int seconds "${SOLAR_INPUT_SECONDS:-}" 5
sleep "$int" &
child=$!
printf '%s\n%s\n' "$$" "$child" >"$work/sleep.pids"
wait "$child"
changed=1
solar_done
