package bench

import (
	"net"
	"time"

	"github.com/redis/rueidis"

	rueidisdriver "github.com/quorumlock/quorumlock/driver/rueidis"
)

// NewRueidisClient returns a rueidis client to the servers at addrs: one
// master, or the seeds of a Redis Cluster (rueidis finds out which). It
// has 1 s dial and write timeouts, as the other contenders, and no client
// side cache, which a lock does not use (rueidis would otherwise turn on
// CLIENT TRACKING on each connection).
//
// With countDials, the client's dials are counted (rueidisdriver.CountDials)
// for rueidisdriver.WithDials: each lock call then holds a dedicated
// connection, so the client opens one per call in flight, and each gets
// 16 KiB buffers and a ring of 256 instead of rueidis' 0.5 MiB buffers and
// 1024, which a pipelined connection shared by many calls wants and one
// call's connection does not. Without, dials is nil.
func NewRueidisClient(addrs []string, countDials bool) (client rueidis.Client, dials *rueidisdriver.Dials, err error) {
	opt := rueidis.ClientOption{
		InitAddress:      addrs,
		Dialer:           net.Dialer{Timeout: time.Second},
		ConnWriteTimeout: time.Second,
		DisableCache:     true,
	}
	if countDials {
		opt.ReadBufferEachConn, opt.WriteBufferEachConn, opt.RingScaleEachConn = 1<<14, 1<<14, 8
		dials = rueidisdriver.CountDials(&opt)
	}
	client, err = rueidis.NewClient(opt)
	if err != nil {
		return nil, nil, err
	}
	return client, dials, nil
}
