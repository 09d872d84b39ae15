package redlock

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/redlock/internal/fanout"
)

// whenReturned runs its function once every request recorded for the master
// has returned, whichever returns last: an acquisition round's part or a
// retake, and says whether any got no reply; at once when all have.
func TestTrail_WhenReturned(t *testing.T) {
	replies := make([]func(ask, fanout.Vote, error), 2)
	// Nobody answers within the timeout: Run returns with both
	// requests still on their way, and the test answers them later.
	res, err := fanout.Run(context.Background(), fanout.Config{Nodes: 2, Need: 1, Timeout: 10 * time.Millisecond},
		func(ctx context.Context, n *fanout.Node[ask]) { replies[n.Index()] = n.Answer })
	require.NoError(t, err)
	tr := newTrail(2, []round{{res: res}})
	retake := newRetakeRequest()
	tr.add(1, retake)

	type returned struct{ unsure bool }
	var got []returned
	tr.whenReturned(1, func(unsure bool) { got = append(got, returned{unsure}) })
	assert.Empty(t, got, "two requests are on their way")
	replies[1](ask{err: errors.New("no reply")}, fanout.No, nil)
	assert.Empty(t, got, "the retake is still on its way")
	retake.finish(false)
	assert.Equal(t, []returned{{true}}, got, "runs when the last returns; the round's part got no reply")

	tr.whenReturned(1, func(unsure bool) { got = append(got, returned{unsure}) })
	assert.Len(t, got, 2, "runs at once when all have returned")

	got = nil
	tr.whenReturned(0, func(unsure bool) { got = append(got, returned{unsure}) })
	replies[0](ask{}, fanout.Yes, nil)
	assert.Equal(t, []returned{{false}}, got)
}
