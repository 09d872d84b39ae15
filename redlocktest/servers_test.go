package redlocktest_test

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/redlocktest"
)

func TestStart_NoMasters_IsInvalid(t *testing.T) {
	for _, n := range []int{0, -1} {
		s, err := redlocktest.Start(n)
		assert.ErrorIs(t, err, redlock.ErrInvalid, "n=%d", n)
		assert.Nil(t, s, "n=%d", n)
	}
}

// listens reports whether something accepts connections at addr.
func listens(addr string) bool {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		conn.Close()
	}
	return err == nil
}

func TestServers_UpFollowsKillAndRestart_CloseStopsAll(t *testing.T) {
	s, err := redlocktest.Start(3)
	require.NoError(t, err)
	defer s.Close()
	addrs := s.Addrs()
	require.Len(t, addrs, 3)
	assert.Equal(t, 3, s.Up())

	require.NoError(t, s.Kill(1))
	require.NoError(t, s.Kill(1), "killing a master that is down does nothing")
	assert.Equal(t, 2, s.Up())
	assert.False(t, listens(addrs[1]), "a killed master does not listen")
	assert.True(t, listens(addrs[0]), "the others still do")

	require.NoError(t, s.Restart(1))
	assert.Equal(t, 3, s.Up())
	assert.True(t, listens(addrs[1]), "a restarted master listens on its port again")
	assert.ErrorIs(t, s.Kill(3), redlock.ErrInvalid)
	assert.ErrorIs(t, s.Restart(-1), redlock.ErrInvalid)

	s.Close()
	s.Close() // a second Close does nothing more
	assert.Equal(t, 0, s.Up())
	for _, a := range addrs {
		assert.False(t, listens(a), "master %s still listens after Close", a)
	}
}
