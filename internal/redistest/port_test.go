package redistest_test

import (
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/internal/redistest"
)

func TestFreePorts_DistinctAndBindable(t *testing.T) {
	ports, err := redistest.FreePorts(4)
	require.NoError(t, err)
	one, err := redistest.FreePort()
	require.NoError(t, err)
	assert.Len(t, ports, 4)
	seen := map[int]bool{}
	for _, p := range ports {
		assert.False(t, seen[p], "port %d given twice", p)
		seen[p] = true
	}
	for _, p := range append(ports, one) {
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if assert.NoError(t, err, "port %d", p) {
			l.Close()
		}
	}
}
