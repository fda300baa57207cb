package sshdtest

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// testUser is the login of every test server: a real, unprivileged
// account, so that tests see what a node's ordinary user sees (its own
// home, no root).
const testUser = "solartest"

// testShell is the test user's login shell; sshd refuses a user whose
// shell does not exist.
const testShell = "/bin/sh"

// userHome caches the home of testUser once this process has checked the
// account.
var userHome struct {
	sync.Mutex
	path string
}

// User makes sure the unprivileged test user "solartest" exists and can log
// in with a key, and returns its name and home directory. A missing user is
// created with useradd -m; an account that sshd would refuse (locked
// password field, other shell, no home) is repaired.
//
// The user is shared by every test and every test process on the machine
// and outlives them. User is safe to call from tests running in parallel,
// in one process or several.
//
// It needs root; without it the test is skipped (see Require).
func User(t testing.TB) (name, home string) {
	t.Helper()
	if os.Geteuid() != 0 {
		Require(t, "root", "tests that start sshd need root to create the test user")
	}
	userHome.Lock()
	defer userHome.Unlock()
	if userHome.path == "" {
		home, err := ensureUser()
		if err != nil {
			t.Fatalf("sshdtest: test user %s: %v", testUser, err)
		}
		userHome.path = home
	}
	return testUser, userHome.path
}

// passwdEntry is the part of an /etc/passwd line User checks.
type passwdEntry struct {
	uid, gid    int
	home, shell string
}

func ensureUser() (home string, err error) {
	unlock, err := lockMachine()
	if err != nil {
		return "", err
	}
	defer unlock()
	pw, err := lookupPasswd(testUser)
	if errors.Is(err, fs.ErrNotExist) {
		out, addErr := exec.Command("useradd", "-m", "-s", testShell, testUser).CombinedOutput()
		// A process outside the lock may have made it meanwhile.
		if pw, err = lookupPasswd(testUser); err != nil {
			return "", fmt.Errorf("useradd: %v: %s", addErr, bytesTrim(out))
		}
	}
	if err != nil {
		return "", err
	}
	// Without PAM, sshd refuses an account whose password field starts
	// with "!" ("account is locked"), which is how useradd leaves it. "*"
	// allows no password either, but is not a lock.
	locked, err := passwordLocked(testUser)
	if err != nil {
		return "", err
	}
	if locked || pw.shell != testShell {
		if out, err := exec.Command("usermod", "-p", "*", "-s", testShell, testUser).CombinedOutput(); err != nil {
			return "", fmt.Errorf("usermod: %v: %s", err, bytesTrim(out))
		}
	}
	if _, err := os.Stat(pw.home); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(pw.home, 0o755); err != nil {
			return "", err
		}
		if err := os.Chown(pw.home, pw.uid, pw.gid); err != nil {
			return "", err
		}
	}
	return pw.home, nil
}

// lookupPasswd reads name's entry in /etc/passwd, which is where useradd
// writes; it is fs.ErrNotExist when there is none.
func lookupPasswd(name string) (passwdEntry, error) {
	fields, err := dbEntry("/etc/passwd", name)
	if err != nil {
		return passwdEntry{}, err
	}
	if len(fields) < 7 {
		return passwdEntry{}, fmt.Errorf("/etc/passwd: malformed entry for %s", name)
	}
	uid, err1 := strconv.Atoi(fields[2])
	gid, err2 := strconv.Atoi(fields[3])
	if err := errors.Join(err1, err2); err != nil {
		return passwdEntry{}, fmt.Errorf("/etc/passwd: entry for %s: %w", name, err)
	}
	return passwdEntry{uid: uid, gid: gid, home: fields[5], shell: fields[6]}, nil
}

// passwordLocked reports whether name's password field in /etc/shadow marks
// the account locked for sshd.
func passwordLocked(name string) (bool, error) {
	fields, err := dbEntry("/etc/shadow", name)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil // no shadow entry: nothing for sshd to find locked
	}
	if err != nil {
		return false, err
	}
	return len(fields) > 1 && strings.HasPrefix(fields[1], "!"), nil
}

// dbEntry returns the colon-separated fields of name's line in a file laid
// out like /etc/passwd, or fs.ErrNotExist.
func dbEntry(file, name string) ([]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Split(sc.Text(), ":"); fields[0] == name {
			return fields, nil
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return nil, fmt.Errorf("%s: no entry for %s: %w", file, name, fs.ErrNotExist)
}

func bytesTrim(b []byte) string { return strings.TrimSpace(string(b)) }
