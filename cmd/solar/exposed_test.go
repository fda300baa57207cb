package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/solarops/solar/internal/sshdtest"
)

// TestExposedStoreWarned: a read-only command of a user who does not own
// a store file others can read cannot make it private; it warns, names the
// file and its mode, and still does its work.
func TestExposedStoreWarned(t *testing.T) {
	if os.Geteuid() != 0 {
		sshdtest.Require(t, "root", "the test runs solar as the user nobody on a store root owns")
	}
	if _, err := exec.LookPath("runuser"); err != nil {
		sshdtest.Require(t, "runuser", "apt-get install util-linux")
	}
	root, err := os.MkdirTemp("", "solar-exposed-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	bin, db := filepath.Join(root, "solar"), filepath.Join(root, "solar.db")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	copyFile(t, exe, bin, 0o755)
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	mk := exec.Command(bin, "resource", "create", "n1", filepath.Join(repo, "testdata", "resources", "node"), "ip=10.0.0.1")
	mk.Env = []string{"SOLAR_DB=" + db, "HOME=" + root, "PATH=" + os.Getenv("PATH")}
	if out, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("create: %v: %s", err, out)
	}
	if err := os.Chmod(db, 0o644); err != nil {
		t.Fatal(err)
	}
	list := exec.Command("runuser", "-u", "nobody", "--", "env", "-i", "SOLAR_DB="+db, "HOME=/nonexistent", "LC_ALL=C", bin, "resource", "list")
	var stdout, stderr strings.Builder
	list.Stdout, list.Stderr = &stdout, &stderr
	if err := list.Run(); err != nil {
		t.Fatalf("resource list as nobody: %v: %s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "n1 ") {
		t.Errorf("resource list printed %q, want n1", stdout.String())
	}
	want := "solar: warning: store " + db + " has mode 0644: others can read its secrets and it is not yours to tighten; ask its owner to run chmod 600 on it\n"
	if stderr.String() != want {
		t.Errorf("stderr = %q, want %q", stderr.String(), want)
	}
	st, err := os.Stat(db)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o644 {
		t.Errorf("store mode after a foreign read = %04o, want 0644 unchanged", st.Mode().Perm())
	}
}
