package redistest_test

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/internal/redistest"
)

func TestStart_PasswordProtectedServerCountsAsUp(t *testing.T) {
	srv := redistest.Start(t, 1, redistest.Ephemeral, "--requirepass", "s3cret")
	c, err := net.DialTimeout("tcp", srv[0].Addr(), time.Second)
	require.NoError(t, err)
	c.Close()
}

func TestServer_KillAndRestart(t *testing.T) {
	s := redistest.Start(t, 1, redistest.Ephemeral)[0]
	pid := s.PID()
	require.NotZero(t, pid)
	require.NoError(t, s.Kill())
	assert.Zero(t, s.PID())
	_, err := net.DialTimeout("tcp", s.Addr(), 200*time.Millisecond)
	assert.Error(t, err, "nothing listens after a kill")
	require.NoError(t, s.Restart(redistest.Ephemeral))
	assert.NotEqual(t, pid, s.PID())
}

func TestServer_Uptime(t *testing.T) {
	s := redistest.Start(t, 1, redistest.Ephemeral)[0]
	up, err := s.Uptime()
	require.NoError(t, err)
	assert.LessOrEqual(t, up, 2, "a server just started")
	time.Sleep(2100 * time.Millisecond)
	later, err := s.Uptime()
	require.NoError(t, err)
	assert.GreaterOrEqual(t, later, up+2)
	require.NoError(t, s.Kill())
	_, err = s.Uptime()
	assert.Error(t, err, "a killed server has no uptime")
}
