#!/bin/sh
# node run: the noop handler never runs this; a node has nothing to converge.
exit 0
