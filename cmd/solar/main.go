package main

import (
	"os"

	"github.com/solarops/solar/cmd"
)

func main() {
	os.Exit(cmd.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv))
}
