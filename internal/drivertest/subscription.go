package drivertest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/internal/redistest"
)

// The suite's ways of reading a subscription: a goroutine runs Receive, and
// the tests wait, each wait bounded, for what it got.

// receive runs sub.Receive in a goroutine until it fails, which the test
// ends by closing sub.
func receive(sub driver.Subscription) (<-chan driver.Message, <-chan error) {
	got := make(chan driver.Message, 16)
	done := make(chan error, 1)
	go func() {
		for {
			m, err := sub.Receive()
			if err != nil {
				done <- err
				return
			}
			got <- m
		}
	}()
	return got, done
}

// next returns the next message, within 2s.
func next(t *testing.T, got <-chan driver.Message) driver.Message {
	t.Helper()
	select {
	case m := <-got:
		return m
	case <-time.After(2 * time.Second):
		t.Fatal("no message within 2s")
		return driver.Message{}
	}
}

// subscribeAll subscribes sub to chans and checks that each is confirmed,
// in any order.
func subscribeAll(t *testing.T, sub driver.Subscription, got <-chan driver.Message, chans []string) {
	t.Helper()
	require.NoError(t, sub.Subscribe(chans...))
	var confirmed []string
	for range chans {
		m := next(t, got)
		assert.Equal(t, driver.Subscribed, m.Kind)
		confirmed = append(confirmed, m.Channel)
	}
	assert.ElementsMatch(t, chans, confirmed)
}

// heard announces on ch with SPUBLISH at master, and checks that the
// subscription, the one sharded subscriber there, hears it.
func heard(t *testing.T, got <-chan driver.Message, master, ch string) {
	t.Helper()
	n, err := redistest.DoAt(master, "SPUBLISH", ch, "x")
	require.NoError(t, err)
	assert.Equal(t, "1", n, "%s has a sharded subscriber for %s", master, ch)
	assert.Equal(t, driver.Message{Kind: driver.Published, Channel: ch, Payload: "x"}, next(t, got))
}

// closeEndsReceive closes sub and checks that its Receive fails within 2s.
func closeEndsReceive(t *testing.T, sub driver.Subscription, done <-chan error) {
	t.Helper()
	require.NoError(t, sub.Close())
	select {
	case err := <-done:
		assert.Error(t, err, "Receive ends with an error once closed")
	case <-time.After(2 * time.Second):
		t.Fatal("Close did not end Receive")
	}
}

// ends checks that Receive fails within 5s, with no message before: what
// happened (why) is reported, so that the caller subscribes again.
func ends(t *testing.T, got <-chan driver.Message, done <-chan error, why string) {
	t.Helper()
	select {
	case err := <-done:
		assert.Error(t, err, "%s is reported, so that the caller subscribes again", why)
	case m := <-got:
		t.Fatalf("got %v, want Receive to fail", m)
	case <-time.After(5 * time.Second):
		t.Fatalf("%s went unnoticed", why)
	}
}
