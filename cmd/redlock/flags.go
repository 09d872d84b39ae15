package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/driver/redigo"
	"github.com/quorumlock/quorumlock/redlock"
)

// nodesEnv names the environment variable read when --nodes is not given.
const nodesEnv = "REDLOCK_NODES"

// clientFlags are the flags every subcommand shares: where the masters are,
// and the library's options under their own names and with their defaults.
type clientFlags struct {
	nodes        string
	ttl          time.Duration
	driftFactor  float64
	driftMargin  time.Duration
	nodeTimeout  time.Duration
	quorum       int
	restartGuard guardFlag
	fenceKeep    time.Duration
	tls          tlsFlags
	verbose      bool
}

// register adds the shared flags to fs; ttl is the subcommand's default TTL,
// since the library takes a TTL per lock rather than as an option.
func (c *clientFlags) register(fs *flag.FlagSet, ttl time.Duration, ttlUsage string) {
	fs.StringVar(&c.nodes, "nodes", "", "comma-separated masters, host:port or redis:// and rediss:// URLs; a Redis Cluster as redis+cluster://host:port,host:port, with ';' between nodes when several are clusters (default $"+nodesEnv+")")
	durationVar(fs, &c.ttl, "ttl", ttl, ttlUsage)
	fs.Float64Var(&c.driftFactor, "drift-factor", redlock.DefaultDriftFactor, "share of each TTL held back for clock drift between masters, in [0, 1)")
	durationVar(fs, &c.driftMargin, "drift-margin", redlock.DefaultDriftMargin, "fixed part of the drift reserve")
	durationVar(fs, &c.nodeTimeout, "node-timeout", redlock.DefaultNodeTimeout, "bound on each master's part of an operation; at most ttl/10 per lock")
	fs.IntVar(&c.quorum, "quorum", 0, "masters that must agree; 0 means a majority, N/2+1")
	c.restartGuard = guardFlag{auto: true}
	fs.Var(&c.restartGuard, "restart-guard", "how long a restarted master stays out of the quorum, a `duration`; 0 turns the guard off, auto is the longest TTL used plus drift")
	durationVar(fs, &c.fenceKeep, "fence-retention", redlock.DefaultFenceRetention, "how long a key's fencing counter outlives its lock")
	c.tls.register(fs)
	fs.BoolVar(&c.verbose, "v", false, "log what the library does on its own (extensions, retries, quarantines)")
}

// addrs returns the masters from --nodes or $REDLOCK_NODES; none is not an
// error here, since demo and bench then start their own.
func (c *clientFlags) addrs(getenv func(string) string) ([]string, error) {
	src, list := "--nodes", c.nodes
	if list == "" {
		src, list = "$"+nodesEnv, getenv(nodesEnv)
	}
	if strings.TrimSpace(list) == "" {
		return nil, nil
	}
	sep := ","
	if strings.Contains(list, ";") {
		sep = ";" // nodes that are clusters, whose seeds are separated by commas
	}
	parts := strings.Split(list, sep)
	out := make([]string, 0, len(parts))
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" {
			return nil, usageErr("%s %q: entry %d is empty", src, list, i+1)
		}
		if n := len(out); sep == "," && n > 0 && isCluster(out[n-1]) && !strings.Contains(p, "://") {
			out[n-1] += "," + p // another seed of the cluster before it
			continue
		}
		out = append(out, p)
	}
	return out, nil
}

// isCluster reports an address that names a Redis Cluster.
func isCluster(addr string) bool {
	return strings.HasPrefix(addr, "redis+cluster://") || strings.HasPrefix(addr, "rediss+cluster://")
}

// requireAddrs is addrs for subcommands that have no masters of their own.
func (c *clientFlags) requireAddrs(getenv func(string) string) ([]string, error) {
	addrs, err := c.addrs(getenv)
	if err == nil && len(addrs) == 0 {
		err = usageErr("no masters: pass --nodes host:port,host:port,... or set %s", nodesEnv)
	}
	return addrs, err
}

// options turns the flags into the library's options.
func (c *clientFlags) options(log *slog.Logger) []redlock.Option {
	opts := []redlock.Option{
		redlock.WithDriftFactor(c.driftFactor),
		redlock.WithDriftMargin(c.driftMargin),
		redlock.WithNodeTimeout(c.nodeTimeout),
		redlock.WithQuorum(c.quorum),
		redlock.WithFenceRetention(c.fenceKeep),
		redlock.WithLogger(log),
	}
	if !c.restartGuard.auto {
		opts = append(opts, redlock.WithRestartGuard(c.restartGuard.d))
	}
	return opts
}

// client is a lock client over pools the command made, with the --tls
// flags applied to every master; Close closes both.
type client struct {
	*redlock.Client
	pools []driver.Master
}

// Close stops the client, if there is one yet, then closes its pools.
func (c *client) Close() error {
	var err error
	if c.Client != nil {
		err = c.Client.Close()
	}
	for _, p := range c.pools {
		p.Close()
	}
	return err
}

// newClient connects to addrs with the flags' options. Bad addresses,
// unusable TLS files and out-of-range options are usage errors that name
// the value.
func (c *clientFlags) newClient(addrs []string, log *slog.Logger, extra ...redlock.Option) (*client, error) {
	if c.ttl <= 0 {
		return nil, usageErr("--ttl %v is not positive", c.ttl)
	}
	tlsCfg, err := c.tls.config()
	if err != nil {
		return nil, err
	}
	cl := &client{}
	for i, a := range addrs {
		var opts []redigo.Option
		if tlsCfg != nil {
			if setsTLS(a) {
				cl.Close()
				// Not the address itself: it may hold a password.
				return nil, usageErr("node %d is a URL with tls_* parameters, and the --tls flags set TLS for every master: use one or the other", i)
			}
			opts = append(opts, redigo.WithTLS(tlsCfg))
		}
		p, err := redigo.Open(a, opts...)
		if err != nil {
			cl.Close()
			return nil, usageErr("%v: node %d: %v", redlock.ErrInvalid, i, err)
		}
		cl.pools = append(cl.pools, p)
	}
	cl.Client, err = redlock.New(cl.pools, append(c.options(log), extra...)...)
	if err != nil {
		cl.Close()
		if errors.Is(err, redlock.ErrInvalid) {
			return nil, usageErr("%v", err)
		}
		return nil, err
	}
	return cl, nil
}

// guardFlag is --restart-guard: "auto" (the library's default) or a duration.
type guardFlag struct {
	auto bool
	d    time.Duration
}

func (g *guardFlag) String() string {
	if g == nil || g.auto {
		return "auto"
	}
	return g.d.String()
}

func (g *guardFlag) Set(s string) error {
	if s == "auto" {
		*g = guardFlag{auto: true}
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		if isNumber(s) {
			return fmt.Errorf("no unit: use a unit, such as %ss; or 0 for off, or auto", s)
		}
		return fmt.Errorf("want a duration such as 30s, 0 for off, or auto")
	}
	if d < 0 {
		return fmt.Errorf("must not be negative")
	}
	*g = guardFlag{d: d}
	return nil
}

// durationFlag is a time.Duration flag. The flag package's own says only
// "parse error" for a number without a unit; this one says to add one.
type durationFlag struct{ d *time.Duration }

// durationVar defines a durationFlag, as fs.DurationVar would.
func durationVar(fs *flag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fs.Var(durationFlag{p}, name, usage)
}

func (f durationFlag) String() string {
	if f.d == nil {
		return "0s"
	}
	return f.d.String()
}

func (f durationFlag) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		if isNumber(s) {
			return fmt.Errorf("no unit: use a unit, such as %ss or %sms", s, s)
		}
		return fmt.Errorf("want a duration such as 10s, 1m30s or 500ms")
	}
	*f.d = d
	return nil
}

// isNumber reports whether s is a plain number, such as a duration given
// without its unit.
func isNumber(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// command describes a subcommand for its -h text.
type command struct {
	name     string
	synopsis string // after "Usage: redlock NAME "
	about    string // what it does, a paragraph or two
	examples string // indented command lines with a word of explanation
	extra    string // optional trailing section, e.g. exit statuses
}

// newFlagSet returns a flag set that reports nothing itself: parse reports
// errors as one line and -h as the full help.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("redlock "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parse parses args; -h prints the help to a.stdout and ends with status 0.
func (cmd command) parse(a *app, fs *flag.FlagSet, args []string) error {
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		cmd.help(a.stdout, fs)
		return exitWith(exitOK)
	case err != nil:
		return usageErr("%v (see redlock %s -h)", err, cmd.name)
	}
	return nil
}

func (cmd command) help(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, "Usage: redlock %s %s\n\n%s\n", cmd.name, cmd.synopsis, strings.TrimSpace(cmd.about))
	if cmd.examples != "" {
		fmt.Fprintf(w, "\nExamples:\n%s\n", strings.Trim(cmd.examples, "\n"))
	}
	fmt.Fprintf(w, "\nFlags:\n")
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		if _, ok := f.Value.(durationFlag); ok && name == "value" {
			name = "duration"
		}
		dash := "--"
		if len(f.Name) == 1 {
			dash = "-"
		}
		fmt.Fprintf(w, "  %s%s", dash, f.Name)
		if name != "" {
			fmt.Fprintf(w, " %s", name)
		}
		fmt.Fprintf(w, "\n      %s", usage)
		if f.DefValue != "" && f.DefValue != "0" && f.DefValue != "0s" && f.DefValue != "false" {
			fmt.Fprintf(w, " (default %s)", f.DefValue)
		}
		fmt.Fprintln(w)
	})
	if cmd.extra != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimRight(cmd.extra, "\n"))
	}
}
