package redlock

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// Masters that drop their pub/sub connection and come back confirm the
// subscription again; that must neither panic nor leave the waiter deaf.
func TestHub_ConfirmationsAfterReconnect(t *testing.T) {
	c, _, _ := newFakeClient(t, make([]behaviour, 5), WithRestartGuard(0))
	h := c.hub
	w := h.join("k", time.Second, lockOptions{}, nil)
	defer w.leave(false)
	for round := range 3 {
		for i := range 5 {
			h.confirm(i, "k", true)
		}
		assert.Equal(t, 5, w.q.nconf, "round %d", round)
		for i := range 3 {
			h.disconnected(i)
		}
		assert.Equal(t, 2, w.q.nconf, "round %d: two of five cannot hear every quorum", round)
	}
	w.ready(context.Background(), time.Millisecond) // ready stays closed: no wait
}

func TestNodeError_NilCause(t *testing.T) {
	assert.Equal(t, "redlock: node 1 (a): <nil>", (&NodeError{Node: 1, Addr: "a"}).Error())
	assert.Equal(t, "redlock: node 1 (a): held by another owner", (&NodeError{Node: 1, Addr: "a", Err: ErrHeld}).Error())
}
