package torture

import (
	"os"
	"path/filepath"
	"testing"
)

// writeBase writes a round's base into root/base: run takes its
// resource's lock (its children inherit it), sleeps in a child for ms
// milliseconds, and logs.
func writeBase(t *testing.T, root string) string {
	dir := filepath.Join(root, "base")
	files := map[string]string{
		"meta.yaml": `handler: shell
actions:
  run: run.sh
inputs:
  dir: {schema: str!}
  ms: {schema: int, value: 0}
  trap: {schema: int, value: 0}
  secret: {schema: str!, sensitive: true}
`,
		"run.sh": `d=$SOLAR_INPUT_DIR
[ "$SOLAR_INPUT_TRAP" = 1 ] && trap '' TERM
exec 9>>"$d/$SOLAR_RESOURCE.lock"
if ! flock -n 9; then
	echo "OVERLAP $SOLAR_TASK $$" >>"$d/log"
	exit 1
fi
echo "start $SOLAR_TASK $$" >>"$d/log"
sleep "$((SOLAR_INPUT_MS / 1000)).$(printf '%03d' $((SOLAR_INPUT_MS % 1000)))" &
wait
echo "end $SOLAR_TASK $$" >>"$d/log"
`,
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
