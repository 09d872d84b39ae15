package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Each contender's attempts are seen with the votes the masters gave: a
// minority pre-held gives 3 yes and 2 no, a majority pre-held 2 yes and 3 no.
func TestObserver_CountsVotesOfEachAttempt(t *testing.T) {
	cl := startTestbed(t)
	cases := []struct {
		name string
		make func(o *Observer) Locker
	}{
		{"quorumlock", func(o *Observer) Locker { return newObservedQuorumLock(t, cl.addrs, o) }},
		{"redsync", func(o *Observer) Locker { return newObservedRedsync(t, cl.addrs, o) }},
		{"quorumlock-goredis", func(o *Observer) Locker { return newObservedAdapterQuorumLock(t, "goredis", cl.addrs, o) }},
		{"quorumlock-rueidis", func(o *Observer) Locker { return newObservedAdapterQuorumLock(t, "rueidis", cl.addrs, o) }},
		{"redsync-goredis", func(o *Observer) Locker { return newObservedRedsyncGoRedis(t, cl.addrs, o) }},
		{"redsync-rueidis", func(o *Observer) Locker { return newObservedRedsyncRueidis(t, cl.addrs, o) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			for _, held := range []int{2, 3} {
				key := fmt.Sprintf("observe:%s:held%d", tc.name, held)
				o := NewObserver(key, time.Now(), libScripts(t).acquire)
				l := tc.make(o)
				for _, a := range cl.addrs[:held] {
					do(t, a, "SET", key, "foreign", "PX", 60000)
				}
				h, err := l.TryLock(ctx, key)
				if held < quorum {
					require.NoError(t, err)
					require.NoError(t, h.Release(ctx))
				} else {
					require.Error(t, err)
				}
				require.NoError(t, l.Close())

				// Stragglers answer within a node timeout, maybe after Close.
				var got []Attempt
				require.Eventually(t, func() bool {
					got = o.Attempts()
					return len(got) == 1 && got[0].Yes+got[0].No+got[0].Err == masters
				}, 2*time.Second, time.Millisecond, "held on %d: %+v", held, got)
				assert.Equal(t, masters-held, got[0].Yes, "held on %d", held)
				assert.Equal(t, held, got[0].No, "held on %d", held)
				assert.Zero(t, got[0].Err)
			}
		})
	}
}

func TestObserver_IgnoresOtherKeysScriptsAndCommands(t *testing.T) {
	const src = "return 1"
	sha := newScript(src, 0).sha
	o := NewObserver("k", time.Now(), src)
	for _, c := range []struct {
		cmd  string
		args []any
	}{
		{"SET", []any{"other", "t", "NX", "PX", 1}},
		{"SET", []any{"k", "t"}},
		{"SET", []any{"k", "t", "XX", "PX", 10}},
		{"GET", []any{"k"}},
		{"EVALSHA", []any{"another-sha", 1, "k", "t"}},
		{"EVALSHA", []any{sha, 2, "other", "f", "t"}},
		{"EVALSHA", []any{sha, 2, "k", "f"}},
	} {
		_, ok := o.acquireToken(c.cmd, c.args)
		assert.False(t, ok, "%s %v", c.cmd, c.args)
	}
	for _, c := range []struct {
		cmd  string
		args []any
	}{
		{"EVALSHA", []any{sha, 4, "k", "f", "g", "v", "t", "10", "", "1"}},
		{"EVAL", []any{src, 1, "k", "t"}},
		{"SET", []any{"k", "t", "NX", "PX", 10}},
		{"set", []any{"k", "t", "ex", 10, "nx"}},
	} {
		tok, ok := o.acquireToken(c.cmd, c.args)
		assert.True(t, ok, "%s %v", c.cmd, c.args)
		assert.Equal(t, "t", tok)
	}
}
