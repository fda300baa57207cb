#!/bin/sh
# Record the run, then end as the outcome input says.
log="$SOLAR_INPUT_DIR/$SOLAR_RESOURCE.$SOLAR_ACTION.log"
echo "$SOLAR_TASK" >> "$log"
case $SOLAR_INPUT_OUTCOME in
changed) ;;
ok) echo '{"changed": false}' > "$SOLAR_RESULT" ;;
fail) echo "failing as asked" >&2; exit 1 ;;
changed-once)
	# changed on the first run, ok afterwards
	if [ "$(wc -l < "$log")" -gt 1 ]; then echo '{"changed": false}' > "$SOLAR_RESULT"; fi ;;
*) echo "unknown outcome $SOLAR_INPUT_OUTCOME" >&2; exit 2 ;;
esac
