#!/bin/sh
# file update: the same convergence as run, so an update that changes no
# input rewrites nothing and reports "ok".
case $0 in */*) . "${0%/*}/run.sh" ;; *) . ./run.sh ;; esac
