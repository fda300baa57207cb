#!/bin/sh
# Report no outputs (no result file: changed).
if [ -n "$SOLAR_INPUT_FIFO" ]; then
	echo "$SOLAR_TASK" > "$SOLAR_INPUT_FIFO"
fi
if [ "$SOLAR_INPUT_SLEEP" != 0 ]; then
	sleep "$SOLAR_INPUT_SLEEP"
fi
