package driver

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/clock"
)

// short is a ctx whose deadline comes before any probe is due (unless
// one is due within 5ms): on clk, which starts at the real time and only
// runs ahead of it.
func short(t *testing.T, clk *clock.Fake) context.Context {
	ctx, cancel := context.WithDeadline(context.Background(), clk.Now().Add(5*time.Millisecond))
	t.Cleanup(cancel)
	return ctx
}

// brief is a ctx that ends 5ms from now in real time, for a call that
// waits for a probe's outcome: the fake clock does not end it.
func brief(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
	t.Cleanup(cancel)
	return ctx
}

// silenced returns a gate whose master just fell silent.
func silenced(t *testing.T) (*Gate, *clock.Fake) {
	clk := clock.NewFake(time.Now())
	g := NewGate(clk)
	p, err := g.Enter(short(t, clk))
	require.NoError(t, err)
	assert.False(t, p.Probe())
	clk.Advance(50 * time.Millisecond) // its deadline, nothing answered
	g.TimedOut(p)
	require.True(t, g.Silent())
	return g, clk
}

func TestGate_HealthyLetsEveryCallThrough(t *testing.T) {
	clk := clock.NewFake(time.Now())
	g := NewGate(clk)
	for range 100 {
		p, err := g.Enter(short(t, clk))
		require.NoError(t, err)
		assert.False(t, p.Probe())
	}
	assert.False(t, g.Silent())
}

func TestGate_BusyIsNotSilent(t *testing.T) {
	clk := clock.NewFake(time.Now())
	g := NewGate(clk)
	p, err := g.Enter(short(t, clk))
	require.NoError(t, err)
	clk.Advance(40 * time.Millisecond)
	g.Answered() // another call's reply, late in p's wait
	clk.Advance(10 * time.Millisecond)
	g.TimedOut(p)
	assert.False(t, g.Silent(), "a call timed out among answered ones: busy, not silent")
	g.Failed(p)
	assert.False(t, g.Silent(), "a failure of a call that is not a probe tells nothing")
}

func TestGate_SilentPacesProbes(t *testing.T) {
	g, clk := silenced(t)
	var probes []time.Duration
	start := clk.Now()
	for step := 0; step < 1000 && clk.Since(start) < 4*time.Second; step++ {
		p, err := g.Enter(short(t, clk))
		switch {
		case err == nil:
			require.True(t, p.Probe(), "only a probe passes while silent")
			probes = append(probes, clk.Since(start))
			// A second call while the probe is under way waits for its
			// outcome, up to its deadline, and does not probe.
			_, err2 := g.Enter(brief(t))
			assert.ErrorIs(t, err2, ErrSilent)
			clk.Advance(50 * time.Millisecond) // the probe's deadline
			g.TimedOut(p)
		default:
			assert.ErrorIs(t, err, ErrSilent)
			assert.ErrorIs(t, err, context.DeadlineExceeded, "taken as a call without a reply")
			clk.Advance(10 * time.Millisecond)
		}
	}
	// Probes at 400ms, then 800ms and 1s after each failure (each failure
	// 50ms after its probe), then every 1s.
	want := []time.Duration{400, 1250, 2300, 3350}
	require.Len(t, probes, len(want), "probes at %v", probes)
	for i, w := range want {
		assert.InDelta(t, float64(w*time.Millisecond), float64(probes[i]), float64(10*time.Millisecond), "probe %d", i)
	}
}

func TestGate_AnswerEndsSilence(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(g *Gate, probe Pass)
	}{
		{"the probe answered", func(g *Gate, probe Pass) { g.Answered() }},
		{"a call sent before answered", func(g *Gate, probe Pass) { g.Answered(); g.TimedOut(probe) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, clk := silenced(t)
			clk.Advance(MinRedial)
			probe, err := g.Enter(short(t, clk))
			require.NoError(t, err)
			require.True(t, probe.Probe())
			tc.end(g, probe)
			assert.False(t, g.Silent())
			for range 10 {
				p, err := g.Enter(short(t, clk))
				require.NoError(t, err)
				assert.False(t, p.Probe())
			}
		})
	}
}

func TestGate_FailedProbeBacksOff(t *testing.T) {
	g, clk := silenced(t)
	clk.Advance(MinRedial)
	p, err := g.Enter(short(t, clk))
	require.NoError(t, err)
	g.Failed(p) // refused, say
	_, err = g.Enter(short(t, clk))
	assert.ErrorIs(t, err, ErrSilent)
	clk.Advance(2 * MinRedial)
	p, err = g.Enter(short(t, clk))
	require.NoError(t, err)
	assert.True(t, p.Probe())
	g.Failed(Pass{}) // not the probe: tells nothing
	_, err = g.Enter(brief(t))
	assert.ErrorIs(t, err, ErrSilent, "the probe is still under way")
}

func TestGate_LongDeadlineWaitsForTheProbe(t *testing.T) {
	g, clk := silenced(t)
	got := make(chan error, 1)

	go func() {
		ctx, cancel := context.WithDeadline(context.Background(), clk.Now().Add(time.Minute))
		defer cancel()
		p, err := g.Enter(ctx)
		if err == nil && !p.Probe() {
			err = errors.New("not a probe")
		}
		got <- err
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, clk.BlockUntil(ctx, 1), "the call waits for the probe's turn")
	clk.Advance(MinRedial)
	select {
	case err := <-got:
		assert.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting call did not probe")
	}
}

func TestGate_WaitingCallLeavesWithItsCtx(t *testing.T) {
	g, _ := silenced(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := g.Enter(ctx)
	assert.ErrorIs(t, err, context.Canceled)
}

func TestGate_Left(t *testing.T) {
	for _, tc := range []struct {
		name     string
		answered bool
		err      error
		silent   bool // the probe's master is still silent
	}{
		{"answered", true, nil, false},
		{"an error reply", true, Error("ERR no"), false},
		{"deadline", false, context.DeadlineExceeded, true},
		{"refused", false, errors.New("connect: connection refused"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, clk := silenced(t)
			clk.Advance(MinRedial)
			p, err := g.Enter(short(t, clk))
			require.NoError(t, err)
			require.True(t, p.Probe())
			clk.Advance(50 * time.Millisecond)
			g.Left(p, tc.answered, tc.err)
			assert.Equal(t, tc.silent, g.Silent())
			if tc.silent {
				_, err := g.Enter(short(t, clk))
				assert.ErrorIs(t, err, ErrSilent, "the failed probe backs off")
			}
		})
	}
}

func TestGate_CallSentJustBeforeTheStopTells(t *testing.T) {
	clk := clock.NewFake(time.Now())
	g := NewGate(clk)
	p, err := g.Enter(short(t, clk))
	require.NoError(t, err)
	clk.Advance(time.Millisecond)
	g.Answered() // the calls before it, answered as the master stopped
	clk.Advance(49 * time.Millisecond)
	g.TimedOut(p)
	assert.True(t, g.Silent())
}

func TestGate_CallDuringTheProbeWaitsForItsOutcome(t *testing.T) {
	for _, tc := range []struct {
		name     string
		answered bool
		want     error
	}{
		{"answered: through", true, nil},
		{"no answer: silent", false, ErrSilent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, clk := silenced(t)
			clk.Advance(MinRedial)
			probe, err := g.Enter(short(t, clk))
			require.NoError(t, err)
			require.True(t, probe.Probe())
			got := make(chan error, 1)
			go func() {
				// Long enough to wait for the probe, too short to wait for
				// the next one.
				ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
				defer cancel()
				p, err := g.Enter(ctx)
				if err == nil && p.Probe() {
					err = errors.New("a probe")
				}
				got <- err
			}()
			time.Sleep(20 * time.Millisecond) // let it wait; the outcome is the same if it comes later
			if tc.answered {
				g.Answered()
			} else {
				clk.Advance(50 * time.Millisecond)
				g.TimedOut(probe)
			}
			select {
			case err := <-got:
				if tc.want == nil {
					assert.NoError(t, err)
				} else {
					assert.ErrorIs(t, err, tc.want)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the waiting call never ended")
			}
		})
	}
}
