package redistest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A server whose port another server took first does not pass for
// started, though the other answers PING there.
func TestStart_APortTakenByAnotherServerIsNoStart(t *testing.T) {
	other := Start(t, 1, Ephemeral)[0]
	bin, err := Binary()
	require.NoError(t, err)
	s := &Server{Port: other.Port, Dir: t.TempDir(), bin: bin}
	t.Cleanup(func() { s.Kill() })
	err = s.start(Ephemeral)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "another redis-server")
	assert.Zero(t, s.PID(), "the server that could not bind is gone")
}
