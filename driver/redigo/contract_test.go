package redigo_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/driver/redigo"
	"github.com/quorumlock/quorumlock/internal/drivertest"
)

// The redigo driver passes the contract every driver passes, its calls
// sharing one connection (a SIGSTOPped master among the contract's cases).
func TestContract_Driver(t *testing.T) {
	drivertest.Run(t, func(t testing.TB, addr string) driver.Master {
		p, err := redigo.New(addr)
		require.NoError(t, err)
		return p
	})
}
