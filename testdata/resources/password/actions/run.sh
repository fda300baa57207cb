#!/bin/sh
# password run (and update): generate the password once. A password that is
# already set, generated before or given by the operator, is kept and the
# result is "ok". In check mode (SOLAR_CHECK=1) nothing is generated: the
# result says whether a run would generate one.
case $0 in */*) . "${0%/*}/lib.sh" ;; *) . ./lib.sh ;; esac
solar_init

if [ -n "${SOLAR_INPUT_PASSWORD:-}" ]; then
	solar_done
	exit 0
fi
solar_int length "${SOLAR_INPUT_LENGTH:-}" 24
if [ "${#int}" -gt 4 ] || [ "$int" -lt 1 ] || [ "$int" -gt 4096 ]; then
	solar_die "input length must be between 1 and 4096, got '${SOLAR_INPUT_LENGTH:-}'"
fi
# Check mode: a run would generate one, which is the change; making one here
# would only put a secret that nothing keeps into a result file.
if [ "$solar_check" = 1 ]; then
	solar_differ password "password: none committed, a run would generate one"
	solar_done
	exit 0
fi
# Only alphanumerics, so the value needs no quoting in JSON, URLs or configs.
# LC_ALL=C makes tr work on bytes, whatever the locale; tr dies of SIGPIPE
# when head has enough, which is expected, hence its silenced stderr.
secret=$(LC_ALL=C tr -dc 'A-Za-z0-9' </dev/urandom 2>/dev/null | head -c "$int")
[ "${#secret}" -eq "$int" ] || solar_die "could not read $int random characters from /dev/urandom"
changed=1
solar_done "{\"password\": \"$secret\"}"
