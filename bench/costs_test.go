package bench

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The meter counts the commands and connections of others, not its own, and
// the client's allocations.
func TestMeter_CountsOthersNotItself(t *testing.T) {
	cl := startTestbed(t)
	m, err := NewMeter(cl.addrs)
	require.NoError(t, err)
	defer m.Close()
	before, err := m.Read()
	require.NoError(t, err)
	again, err := m.Read()
	require.NoError(t, err)
	idle := again.Sub(before)
	assert.Zero(t, idle.Commands, "the meter's own INFO")
	assert.Zero(t, idle.Connections)

	for _, a := range cl.addrs { // do dials once per command
		do(t, a, "SET", "meter", "x")
		do(t, a, "GET", "meter")
	}
	sink := make([][]byte, 0, 100)
	for range 100 {
		sink = append(sink, make([]byte, 1000))
	}
	after, err := m.Read()
	require.NoError(t, err)
	d := after.Sub(again)
	assert.EqualValues(t, 2*len(cl.addrs), d.Commands)
	assert.EqualValues(t, 2*len(cl.addrs), d.Connections)
	assert.GreaterOrEqual(t, d.ServerIO, uint64(4*len(cl.addrs)), "a read and a write per command at least")
	assert.GreaterOrEqual(t, d.Wakeups, float64(len(cl.addrs)), "each master woke for its commands")
	assert.GreaterOrEqual(t, d.Mallocs, uint64(len(sink)))
	assert.GreaterOrEqual(t, d.Bytes, uint64(100*1000))
	assert.Positive(t, d.ClientCPU)
	assert.Positive(t, d.Syscalls, "the client's reads and writes")
}
