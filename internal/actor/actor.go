// Package actor says who acts: the name every record a command or a
// runner writes carries (staged entries, plans, attempts, history, trust
// changes), so that a team sharing a store sees who did what.
//
// The actor is $SOLAR_ACTOR when set (a CI job, a shared account), else
// user@host: the OS user name and the host name of the machine the
// command runs on.
package actor

import (
	"os"
	"os/user"
	"strconv"
	"strings"
)

// Of returns the actor of a command whose environment getenv reads.
func Of(getenv func(string) string) string {
	if a := strings.TrimSpace(getenv("SOLAR_ACTOR")); a != "" {
		return clean(a)
	}
	return userName(getenv) + "@" + Host()
}

// Host is this machine's host name ("localhost" when it has none).
func Host() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "localhost"
	}
	return h
}

// userName is the OS user's name: the password database's, else $USER,
// else the numeric uid.
func userName(getenv func(string) string) string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	if u := getenv("USER"); u != "" {
		return clean(u)
	}
	return strconv.Itoa(os.Getuid())
}

// clean keeps an actor to one printable line of at most 200 bytes: it is
// shown in tables and logs.
func clean(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			continue
		}
		b.WriteRune(r)
	}
	out := b.String()
	if len(out) > 200 {
		out = out[:200]
	}
	return out
}
