package resource

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/solarops/solar/resources"
)

// TestParseMeta: --meta reads comma-separated pairs like --tags, may be
// repeated, appends to sema and refuses a scalar given twice.
func TestParseMeta(t *testing.T) {
	for _, tt := range []struct {
		name    string
		items   []string
		want    string // JSON of the Meta, or "" for an error
		errPart string
	}{
		{"pairs", []string{"retry=3,delay=200ms"}, `{"retry":3,"delay":"200ms"}`, ""},
		{"repeated", []string{"retry=3", "timeout=1s"}, `{"retry":3,"timeout":"1s"}`, ""},
		{"sema twice", []string{"sema=db:1,sema=web:2"}, `{"sema":["db:1","web:2"]}`, ""},
		{"sema over flags", []string{"sema=db:1", "sema=web:2,retry=1"}, `{"retry":1,"sema":["db:1","web:2"]}`, ""},
		{"sema list continues", []string{"sema=db:1,web:2,delay=1s"}, `{"delay":"1s","sema":["db:1","web:2"]}`, ""},
		{"scalar twice", []string{"retry=3,retry=4"}, "", "meta retry given twice"},
		{"scalar twice over flags", []string{"delay=1s", "delay=1s"}, "", "meta delay given twice"},
		{"no equals", []string{"retry"}, "", `--meta "retry": want key=value`},
		{"bare after scalar", []string{"retry=1,2"}, "", `--meta "retry=1,2": want key=value`},
		{"bad sema item", []string{"sema=db:1,web"}, "", `sema "web"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, err := parseMeta(tt.items)
			if tt.errPart != "" {
				if !errors.Is(err, resources.ErrInvalid) || !strings.Contains(err.Error(), tt.errPart) {
					t.Fatalf("err = %v, want ErrInvalid containing %q", err, tt.errPart)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if raw, _ := json.Marshal(m); string(raw) != tt.want {
				t.Errorf("meta = %s, want %s", raw, tt.want)
			}
		})
	}
}
