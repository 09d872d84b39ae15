package goredis_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/internal/redistest"
)

type received struct {
	msg driver.Message
	err error
}

// receive returns the next event of sub, or fails t after 2 s.
func receive(t *testing.T, sub driver.Subscription) received {
	t.Helper()
	got := make(chan received, 1)
	go func() {
		m, err := sub.Receive()
		got <- received{m, err}
	}()
	select {
	case r := <-got:
		return r
	case <-time.After(2 * time.Second):
		sub.Close() // ends the Receive above
		t.Fatal("Receive did not return within 2s")
		return received{}
	}
}

// A subscription ends at its connection's first failure, for good: the lock
// must hear of it, as the announcements sent meanwhile were lost. go-redis
// alone would connect again and subscribe again, in silence.
func TestSubscription_EndsWithItsConnection(t *testing.T) {
	for _, mode := range clientModes {
		t.Run(mode.name, func(t *testing.T) {
			srv := redistest.Start(t, 1, redistest.Ephemeral)
			m := wrap(t, srv[0].Addr(), mode.opt)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			sub, err := m.Subscribe(ctx)
			require.NoError(t, err)
			defer sub.Close()
			require.NoError(t, sub.Subscribe("c"))
			assert.Equal(t, received{msg: driver.Message{Kind: driver.Subscribed, Channel: "c"}}, receive(t, sub))
			require.NoError(t, sub.Unsubscribe(), "no channels: nothing to do")
			_, err = srv[0].Do("PUBLISH", "c", "x")
			require.NoError(t, err)
			assert.Equal(t, received{msg: driver.Message{Kind: driver.Published, Channel: "c", Payload: "x"}}, receive(t, sub),
				"still subscribed after Unsubscribe with no channels")

			require.NoError(t, srv[0].Kill())
			require.NoError(t, srv[0].Restart(redistest.Ephemeral))
			assert.Error(t, receive(t, sub).err, "the connection failed")
			assert.Error(t, receive(t, sub).err, "and stays failed, not subscribed again")
			assert.Error(t, sub.Subscribe("c"))
		})
	}
}
