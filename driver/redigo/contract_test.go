package redigo_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/driver/redigo"
	"github.com/quorumlock/quorumlock/internal/drivertest"
)

// The redigo driver passes the contract every driver passes, in both modes:
// pooled, a connection per call, and pipelined, calls sharing one connection
// (a SIGSTOPped master among the contract's cases).
func TestContract_Driver(t *testing.T) {
	for _, mode := range []struct {
		name      string
		pipelined bool
	}{{"pooled", false}, {"pipelined", true}} {
		t.Run(mode.name, func(t *testing.T) {
			drivertest.Run(t, func(t testing.TB, addr string) driver.Master {
				p, err := redigo.New(addr, redigo.WithPipeline(mode.pipelined))
				require.NoError(t, err)
				return p
			})
		})
	}
}
