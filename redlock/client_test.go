package redlock

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/driver"
)

// closeCounter is a driver that counts its Close calls.
type closeCounter struct {
	stubPool
	closed int
}

func (c *closeCounter) Close() error { c.closed++; return nil }

// The drivers given to New stay the caller's unless WithCloseDrivers hands
// them to Close; a New that fails closes nothing either way.
func TestNew_WhoClosesTheDrivers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   []Option
		fails  bool
		closed int
	}{
		{"the caller's", nil, false, 0},
		{"the client's", []Option{WithCloseDrivers()}, false, 1},
		{"refused, the caller's", []Option{WithCloseDrivers(), WithQuorum(1)}, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := []*closeCounter{{stubPool: stubPool{a: "a"}}, {stubPool: stubPool{a: "b"}}, {stubPool: stubPool{a: "c"}}}
			ms := make([]driver.Master, len(ds))
			for i, d := range ds {
				ms[i] = d
			}
			c, err := New(ms, append(tc.opts, WithLogger(quiet()))...)
			if tc.fails {
				require.ErrorIs(t, err, ErrInvalid)
			} else {
				require.NoError(t, err)
				require.NoError(t, c.Close())
				require.NoError(t, c.Close(), "a second Close does nothing more")
			}
			for i, d := range ds {
				assert.Equal(t, tc.closed, d.closed, fmt.Sprintf("driver %d", i))
			}
		})
	}
}
