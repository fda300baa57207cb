// Package apptest is what the tests of solar's commands share: an app.App
// on buffers with a store of its own (Env), a session of commands run on it
// with what each must print (Steps), and the execution of a command line
// up to the options it parses into (Parser, CheckParse: cli/cli's runF
// seam). Tests only.
package apptest
