#!/bin/sh
# Record the run; report no outputs (no result file: changed).
echo "$SOLAR_TASK" >> "$SOLAR_INPUT_DIR/runs.log"
