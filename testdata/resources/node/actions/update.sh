#!/bin/sh
# node update: the noop handler never runs this; a node has nothing to converge.
exit 0
