package goredis

// Option configures a Master built by New.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	name        string
	named       bool // WithName was given
	closeClient bool
}

// WithName sets the name the lock gives the master in errors and logs, and
// by which it tells masters apart (each must be listed once). Default: the
// client's address for a standalone client, and "cluster(host:port,...)"
// with the seed addresses for a cluster client. A Sentinel failover client
// has no address of its own: it must be named, with the Sentinel master's
// name for instance. Must not be empty.
func WithName(name string) Option {
	return optionFunc(func(c *config) { c.name, c.named = name, true })
}

// WithCloseClient makes Close close the client too, for a client made only
// for the lock. Default: Close leaves the client open, for the application
// that lent it.
func WithCloseClient() Option {
	return optionFunc(func(c *config) { c.closeClient = true })
}
