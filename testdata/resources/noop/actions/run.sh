#!/bin/sh
# noop run: the noop handler never runs this.
exit 0
