package pool_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/internal/drivertest"
	"github.com/quorumlock/quorumlock/pool"
)

// The redigo driver passes the contract every driver passes.
func TestContract_Driver(t *testing.T) {
	drivertest.Run(t, func(t testing.TB, addr string) driver.Master {
		p, err := pool.New(addr)
		require.NoError(t, err)
		return p
	})
}
