#!/bin/sh
# node remove: the noop handler never runs this; a node has nothing to converge.
exit 0
