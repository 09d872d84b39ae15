package main

import (
	"context"
	"fmt"
	"io"
	"os"
)

func main() {
	a := &app{
		stdin:   os.Stdin,
		stdout:  os.Stdout,
		stderr:  os.Stderr,
		getenv:  os.Getenv,
		environ: os.Environ,
	}
	os.Exit(a.main(context.Background(), os.Args[1:]))
}

// app is the command's connection to the outside world, passed explicitly
// so that nothing global is read or changed.
type app struct {
	stdin          *os.File
	stdout, stderr io.Writer
	getenv         func(string) string
	environ        func() []string
}

// subcommand is one of redlock's verbs.
type subcommand struct {
	name    string
	summary string
	run     func(ctx context.Context, a *app, args []string) error
}

func subcommands() []subcommand {
	return []subcommand{
		{"demo", "watch a quorum lock survive failing masters (runs with nothing but Go)", runDemo},
		{"run", "run a command while holding a lock", runRun},
		{"status", "show what every master says about a key", runStatus},
		{"check", "check that the masters are ready for locking, and say what to fix", runCheck},
		{"bench", "measure acquire+release throughput and latency", runBench},
	}
}

// main runs the subcommand named by args[0] and returns the exit status.
func (a *app) main(ctx context.Context, args []string) int {
	if len(args) == 0 {
		a.usage(a.stderr)
		return exitUsage
	}
	name, rest := args[0], args[1:]
	switch name {
	case "-h", "-help", "--help", "help":
		a.usage(a.stdout)
		return exitOK
	}
	for _, c := range subcommands() {
		if c.name == name {
			code, msg := exitCode(c.run(ctx, a, rest))
			if msg != "" {
				fmt.Fprintf(a.stderr, "redlock %s: %s\n", name, msg)
			}
			return code
		}
	}
	fmt.Fprintf(a.stderr, "redlock: unknown command %q (commands: demo, run, status, check, bench; see redlock -h)\n", name)
	return exitUsage
}

func (a *app) usage(w io.Writer) {
	fmt.Fprint(w, `Usage: redlock COMMAND [flags] [args]

Locks over N independent Redis masters (the Redlock algorithm), from the shell.

Commands:
`)
	for _, c := range subcommands() {
		fmt.Fprintf(w, "  %-7s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, `
Masters come from --nodes host:port,host:port,... (or redis:// and rediss://
URLs) or from the REDLOCK_NODES environment variable. Without either, demo and
bench start five in-process masters. --tls and the --tls-* flags reach every
master over TLS, with a client certificate if --tls-cert-file is given.

Before the first lock, "redlock check --nodes ..." probes every master (version,
role, persistence, eviction, ACL, uptime, clock) and says what to fix; it
exits 0 when locking will work, 1 when it will not.

Run "redlock COMMAND -h" for a command's flags and examples. First time here?

  redlock demo
`)
}
