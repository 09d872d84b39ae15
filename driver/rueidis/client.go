package rueidisdriver

import (
	"fmt"

	"github.com/redis/rueidis"

	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/redlock"
)

// NewClient returns a lock client over clients, one master per rueidis
// client, each as New makes it with its defaults, and the lock's options.
// The lock client's Close closes the masters, which give their connections
// back to the clients; the clients stay the caller's to close, after it.
// A nil client is refused with ErrInvalid; when NewClient fails, the
// masters it made are closed.
func NewClient(clients []rueidis.Client, opts ...redlock.Option) (*redlock.Client, error) {
	for i, c := range clients {
		if c == nil {
			return nil, fmt.Errorf("%w: rueidisdriver: client %d is nil", ErrInvalid, i)
		}
	}
	masters := make([]driver.Master, 0, len(clients))
	for _, c := range clients {
		m, err := New(c)
		if err != nil {
			closeAll(masters)
			return nil, err
		}
		masters = append(masters, m)
	}
	lc, err := redlock.New(masters, append(append([]redlock.Option(nil), opts...), redlock.WithCloseDrivers())...)
	if err != nil {
		closeAll(masters) // redlock.New leaves them ours when it fails
		return nil, err
	}
	return lc, nil
}

func closeAll(masters []driver.Master) {
	for _, m := range masters {
		m.Close()
	}
}
