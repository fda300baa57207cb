#!/bin/sh
# noop update: the noop handler never runs this.
exit 0
