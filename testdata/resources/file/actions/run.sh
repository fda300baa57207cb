#!/bin/sh
# file run (and update): write content to <dir>/<path> with mode, unless the
# file already holds exactly that; the content is never echoed.
case $0 in */*) here=${0%/*} ;; *) here=. ;; esac
. "$here/lib.sh"
solar_init
. "$here/target.sh"

mode=${SOLAR_INPUT_MODE:-0600}
case $mode in
'' | *[!0-7]* | ?????*) solar_die "input mode must be an octal mode such as 0644, got '$mode'" ;;
*[4-7]??) ;;
# Without owner read, the next run could not compare and would rewrite
# the file every time.
*) solar_die "input mode must let the owner read the file (such as 0600), got '$mode'" ;;
esac
[ ! -d "$target" ] || solar_die "input path names a directory: $path"
# The content is the operator's and may be a secret: a difference in it is
# reported without detail, and the file is named by its path.
solar_show=$path
solar_put "$target" "$mode" "${SOLAR_INPUT_CONTENT:-}"
solar_done
