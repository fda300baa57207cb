package cmd

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
)

// profileVar names a file that receives a CPU profile of the whole
// command (pprof format), for measuring solar itself: it is not in the
// help, and a file that cannot be made is reported on stderr and the
// command runs without a profile.
const profileVar = "SOLAR_CPUPROFILE"

// startProfile starts the CPU profile that getenv(profileVar) asks for and
// returns what ends it; without the variable both do nothing.
func startProfile(getenv func(string) string, stderr io.Writer) (stop func()) {
	path := getenv(profileVar)
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintf(stderr, "solar: no CPU profile: %v\n", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintf(stderr, "solar: no CPU profile: %v\n", err)
		_ = f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintf(stderr, "solar: CPU profile %s: %v\n", path, err)
		}
	}
}
