package rueidisdriver_test

import (
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	rueidisdriver "github.com/quorumlock/quorumlock/driver/rueidis"
	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/redlock"
)

// When the lock client cannot be built (here: one master listed twice),
// NewClient closes the masters it made: their connections go back to the
// clients, their senders end, and the clients stay open.
func TestNewClient_Refused_ClosesTheMastersItMade(t *testing.T) {
	srv := redistest.Start(t, 1, redistest.Ephemeral)
	client := standalone(t, srv[0].Addr())
	before := goleak.IgnoreCurrent()
	_, err := rueidisdriver.NewClient([]rueidis.Client{client, client})
	require.ErrorIs(t, err, redlock.ErrInvalid)
	assert.Eventually(t, func() bool { return goleak.Find(before) == nil }, 5*time.Second, 50*time.Millisecond,
		"goroutines left: %v", goleak.Find(before))
	assert.NoError(t, client.Do(ctxFor(t, time.Second), client.B().Ping().Build()).Error(), "the client stays open")
}

// A lock client built in one line over the caller's rueidis clients takes,
// extends and releases a lock on real masters; its Close closes what the
// lock holds, and the clients stay the caller's, open.
func TestNewClient_LocksOverTheCallersClients(t *testing.T) {
	srv := redistest.Start(t, 3, redistest.Ephemeral)
	var clients []rueidis.Client
	for _, s := range srv {
		clients = append(clients, standalone(t, s.Addr()))
	}
	c, err := rueidisdriver.NewClient(clients, redlock.WithRestartGuard(0)) // masters started just now
	require.NoError(t, err)
	assert.Equal(t, 3, c.Nodes())
	ctx := ctxFor(t, 10*time.Second)
	l, err := c.TryLock(ctx, "k", 10*time.Second)
	require.NoError(t, err)
	require.NoError(t, l.Extend(ctx, 10*time.Second))
	_, err = c.TryLock(ctx, "k", 10*time.Second)
	require.ErrorIs(t, err, redlock.ErrHeld)
	require.NoError(t, l.Release(ctx))
	require.NoError(t, c.Close())
	for _, cl := range clients {
		assert.NoError(t, cl.Do(ctx, cl.B().Ping().Build()).Error(), "the client stays open")
	}
}
