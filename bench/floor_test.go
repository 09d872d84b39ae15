package bench

import (
	"context"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// floors are the floor on redigo pools and on pipelined connections: every
// floor test runs on both.
var floors = []struct {
	name  string
	plain func(tb testing.TB, addrs []string) *Floor
	lua   func(tb testing.TB, addrs []string) *Floor
}{
	{"redigo", newFloor, newScriptedFloor},
	{"pipelined", newPipelinedFloor, newPipelinedScriptedFloor},
}

func TestFloor_AcquireRelease_HoldsEverywhereThenLeavesNothing(t *testing.T) {
	cl := startTestbed(t)
	for _, fl := range floors {
		t.Run(fl.name, func(t *testing.T) { floorHoldsEverywhere(t, cl, fl.plain(t, cl.addrs)) })
	}
}

func floorHoldsEverywhere(t *testing.T, cl *testbed, f *Floor) {
	warmUp(t, f, "warm") // connections dialled: a cold dial may exceed the node timeout
	ctx := context.Background()

	h, err := f.TryLock(ctx, "k")
	require.NoError(t, err)
	token := h.(*floorLock).token
	f.bg.Wait() // every SET has returned
	for _, a := range cl.addrs {
		assert.Equal(t, token, value(t, a, "k"), a)
	}
	_, err = f.TryLock(ctx, "k")
	assert.ErrorIs(t, err, ErrFloorNotObtained, "a held key is refused")

	require.NoError(t, h.Release(ctx))
	f.bg.Wait()
	for _, a := range cl.addrs {
		assert.Empty(t, value(t, a, "k"), a)
	}
}

func TestFloor_MinorityHeld_StillLocksAndLeavesForeignKeys(t *testing.T) {
	cl := startTestbed(t)
	for _, fl := range floors {
		t.Run(fl.name, func(t *testing.T) { floorMinorityHeld(t, cl, fl.plain(t, cl.addrs)) })
	}
}

func floorMinorityHeld(t *testing.T, cl *testbed, f *Floor) {
	warmUp(t, f, "warm") // connections dialled: a cold dial may exceed the node timeout
	ctx := context.Background()
	for _, a := range cl.addrs {
		do(t, a, "DEL", "k")
	}
	for _, a := range cl.addrs[:2] {
		do(t, a, "SET", "k", "foreign", "PX", 60000)
	}

	h, err := f.TryLock(ctx, "k")
	require.NoError(t, err)
	require.NoError(t, h.Release(ctx))
	f.bg.Wait()
	for _, a := range cl.addrs[:2] {
		assert.Equal(t, "foreign", value(t, a, "k"))
	}
	for _, a := range cl.addrs[2:] {
		assert.Empty(t, value(t, a, "k"))
	}
}

func TestFloor_MajorityHeld_FailsWithoutResidue(t *testing.T) {
	cl := startTestbed(t)
	for _, fl := range floors {
		t.Run(fl.name, func(t *testing.T) { floorMajorityHeld(t, cl, fl.plain(t, cl.addrs)) })
	}
}

func floorMajorityHeld(t *testing.T, cl *testbed, f *Floor) {
	warmUp(t, f, "warm")
	for _, a := range cl.addrs {
		do(t, a, "DEL", "k")
	}
	for _, a := range cl.addrs[:3] {
		do(t, a, "SET", "k", "foreign", "PX", 60000)
	}

	_, err := f.TryLock(context.Background(), "k")
	require.ErrorIs(t, err, ErrFloorNotObtained)
	f.bg.Wait() // the rollback
	for _, a := range cl.addrs[:3] {
		assert.Equal(t, "foreign", value(t, a, "k"))
	}
	for _, a := range cl.addrs[3:] {
		assert.Empty(t, value(t, a, "k"), "no residue of the failed attempt")
	}
}

func TestFloor_SlowMaster_ReturnsAtQuorumAndCleansUpAfterIt(t *testing.T) {
	cl := startTestbed(t)
	for _, fl := range floors {
		t.Run(fl.name, func(t *testing.T) { floorSlowMaster(t, cl, fl.plain(t, cl.slow)) })
	}
}

func floorSlowMaster(t *testing.T, cl *testbed, f *Floor) {
	ctx := context.Background()
	warmUp(t, f, "warm")

	var fastest time.Duration
	for i := range 5 {
		start := time.Now()
		require.NoError(t, AcquireRelease(ctx, f, "k"))
		if d := time.Since(start); i == 0 || d < fastest {
			fastest = d
		}
		f.bg.Wait() // the slow master's SET and delete, before the next try
	}
	assert.Less(t, fastest, slowDelay, "acquire+release waits for the slow master")
	assert.Empty(t, value(t, cl.addrs[0], "k"), "the slow master's late SET was deleted")
}

func TestNewFloor_BadInput_IsAnError(t *testing.T) {
	_, err := NewFloor(nil, time.Second, time.Second)
	assert.Error(t, err)
	_, err = NewFloorFromAddrs([]string{"127.0.0.1:1"}, 0, time.Second)
	assert.Error(t, err)
	_, err = NewFloorFromAddrs([]string{"127.0.0.1:1"}, time.Second, time.Millisecond)
	assert.Error(t, err)
	_, err = NewFloor([]*redis.Pool{nil}, time.Second, time.Second)
	assert.Error(t, err)
}

// The scripted floor keeps up with the library's scripts: if their keys or
// arguments change, this fails.
func TestScriptedFloor_FollowsTheLibrarysScripts(t *testing.T) {
	for _, fl := range floors {
		t.Run(fl.name, func(t *testing.T) {
			cl := startTestbed(t)
			scriptedFloorFollows(t, cl, fl.lua(t, cl.addrs))
		})
	}
}

func scriptedFloorFollows(t *testing.T, cl *testbed, f *Floor) {
	warmUp(t, f, "warm")
	ctx := context.Background()

	h, err := f.TryLock(ctx, "k")
	require.NoError(t, err)
	token := h.(*floorLock).token
	f.bg.Wait()
	for _, a := range cl.addrs {
		assert.Equal(t, token, value(t, a, "k"), a)
		assert.NotEmpty(t, value(t, a, "quorumlock:fence-floor"), "the fence floor on %s", a)
	}
	_, err = f.TryLock(ctx, "k")
	assert.ErrorIs(t, err, ErrFloorNotObtained, "a held key is refused")
	require.NoError(t, h.Release(ctx))
	f.bg.Wait()
	for _, a := range cl.addrs {
		assert.Empty(t, value(t, a, "k"), a)
	}

	// A failed attempt, rolled back by the release script, leaves nothing.
	for _, a := range cl.addrs[:3] {
		do(t, a, "SET", "m", "foreign", "PX", 60000)
	}
	_, err = f.TryLock(ctx, "m")
	require.ErrorIs(t, err, ErrFloorNotObtained)
	f.bg.Wait()
	for _, a := range cl.addrs[3:] {
		assert.Empty(t, value(t, a, "m"), "no residue on %s", a)
	}
}
