package bench

import (
	"net"
	"time"

	"github.com/redis/rueidis"
)

// NewRueidisClient returns a rueidis client to the servers at addrs: one
// master, or the seeds of a Redis Cluster (rueidis finds out which). It
// has 1 s dial and write timeouts, as the other contenders, and no client
// side cache, which a lock does not use (rueidis would otherwise turn on
// CLIENT TRACKING on each connection).
func NewRueidisClient(addrs []string) (rueidis.Client, error) {
	return rueidis.NewClient(rueidis.ClientOption{
		InitAddress:      addrs,
		Dialer:           net.Dialer{Timeout: time.Second},
		ConnWriteTimeout: time.Second,
		DisableCache:     true,
	})
}
