#!/bin/sh
# noop remove: the noop handler never runs this.
exit 0
