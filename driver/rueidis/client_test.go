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
