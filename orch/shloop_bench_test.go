package orch

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BenchmarkShellWideLoops runs 1,000 independent tasks of the minimal
// base at --concurrency 10 and compares them with two 10-way loops of the
// same script: BenchmarkShellWide's, which starts each run from Go
// (os/exec, output through a pipe), and a plain sh loop, as
// scripts/bench-cli.sh runs from the command line. The Go loop's own
// process spends about 0.25–0.35 ms of CPU per run more than sh's, so a
// ratio against it (x-goloop) reads lower than one against a shell loop
// (x-shloop), the issue 32 figure (docs/performance.md).
func BenchmarkShellWideLoops(b *testing.B) {
	const n, ways = 1000, 10
	dir, err := filepath.Abs("testdata/benchbase")
	if err != nil {
		b.Fatal(err)
	}
	var solar, goLoop, shLoop time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		inputs := map[string]any{"dir": b.TempDir()}
		path, uid := benchStore(b, "independent", n, dir, inputs)
		b.StartTimer()
		start := time.Now()
		runBench(b, path, uid, n)
		solar += time.Since(start)
		b.StopTimer()
		inputs["dir"] = b.TempDir()
		goLoop += parallelLoop(b, dir, "actions/run.sh", inputs, n, ways)
		shLoop += shellLoop(b, dir, "actions/run.sh", b.TempDir(), n, ways)
		b.StartTimer()
	}
	b.ReportMetric(float64(solar.Nanoseconds())/float64(b.N)/1e6, "solar-ms")
	b.ReportMetric(float64(goLoop.Nanoseconds())/float64(b.N)/1e6, "goloop-ms")
	b.ReportMetric(float64(shLoop.Nanoseconds())/float64(b.N)/1e6, "shloop-ms")
	b.ReportMetric(float64(solar)/float64(goLoop), "x-goloop")
	b.ReportMetric(float64(solar)/float64(shLoop), "x-shloop")
}

// shellLoop runs the script n times from one sh, ways loops at once, each
// run with a task's environment (as scripts/bench-cli.sh does), and
// returns how long that took, sh's start included.
func shellLoop(b *testing.B, dir, script, out string, n, ways int) time.Duration {
	loop := fmt.Sprintf(`w=0
while [ $w -lt %[1]d ]; do
	(i=0; while [ $i -lt %[2]d ]; do
		SOLAR_RESOURCE=loop$w-$i SOLAR_TASK=loop$w-$i.run#0 SOLAR_ACTION=run SOLAR_RESULT=$RES/result$w.json /bin/sh %[3]s
		i=$((i + 1))
	done) &
	w=$((w + 1))
done
wait`, ways, n/ways, script)
	cmd := exec.Command("/bin/sh", "-c", loop)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SOLAR_INPUT_DIR="+out, "RES="+b.TempDir())
	start := time.Now()
	if raw, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%v: %s", err, raw)
	}
	took := time.Since(start)
	if raw, err := os.ReadFile(filepath.Join(out, "runs.log")); err != nil || strings.Count(string(raw), "\n") != n {
		b.Fatalf("the sh loop ran %d scripts, want %d (%v)", strings.Count(string(raw), "\n"), n, err)
	}
	return took
}
