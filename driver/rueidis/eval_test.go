package rueidisdriver_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/driver"
	rueidisdriver "github.com/quorumlock/quorumlock/driver/rueidis"
	"github.com/quorumlock/quorumlock/internal/redistest"
)

// quietCheck returns a check that is due only when the dial count moved
// since the last reply it saw, as the guard's is once it has answers.
func quietCheck() (func(string) *driver.Check, func(driver.Reply)) {
	var seen uint64
	check := func(string) *driver.Check {
		return &driver.Check{Questions: [][]string{{"INFO", "server"}}, Seen: seen}
	}
	return check, func(rep driver.Reply) { seen = rep.Dials }
}

// Without dial counts, every call carries the guard's questions, even when
// the guard's check is not due by the count it last saw: no connection
// rueidis opens goes unchecked.
func TestEval_WithoutDialCountsEveryCallIsChecked(t *testing.T) {
	srv := redistest.Start(t, 1, redistest.Ephemeral)
	m, err := rueidisdriver.New(standalone(t, srv[0].Addr()))
	require.NoError(t, err)
	s := driver.NewScript("one", `return 1`)
	check, saw := quietCheck()
	for i := range 5 {
		rep, err := m.Eval(ctxFor(t, 2*time.Second), driver.Call{Script: s, Keys: []string{"k"}, Check: check})
		require.NoError(t, err)
		assert.Len(t, rep.Answers, 1, "call %d", i)
		saw(rep)
	}
}

// With dial counts, a call carries the questions only on a connection
// opened since the last answers: when the master drops the client's
// connections (as a restart does), the next call finds its connection dead,
// tries again on a new one, says so (Lost), and carries the questions.
func TestEval_WithDialCountsOnlyNewConnectionsAreChecked(t *testing.T) {
	srv := redistest.Start(t, 1, redistest.Ephemeral)
	client, dials := counted(t, srv[0].Addr())
	m, err := rueidisdriver.New(client, rueidisdriver.WithDials(dials))
	require.NoError(t, err)
	s := driver.NewScript("one", `return 1`)
	check, saw := quietCheck()
	call := driver.Call{Script: s, Keys: []string{"k"}, Check: check}

	rep, err := m.Eval(ctxFor(t, 2*time.Second), call)
	require.NoError(t, err)
	assert.Len(t, rep.Answers, 1, "the first connection is new")
	saw(rep)
	for i := range 3 {
		rep, err = m.Eval(ctxFor(t, 2*time.Second), call)
		require.NoError(t, err)
		assert.Nil(t, rep.Answers, "call %d on the same connection", i)
		assert.False(t, rep.Lost)
		saw(rep)
	}

	_, err = srv[0].Do("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
	require.NoError(t, err)
	rep, err = m.Eval(ctxFor(t, 2*time.Second), call)
	require.NoError(t, err)
	assert.True(t, rep.Lost, "the dead connection was replaced")
	assert.Len(t, rep.Answers, 1, "the new connection is checked")
}

// A call to a stopped master whose connection is still to be dialled
// returns at its deadline, and the connection that rueidis dials later is
// not leaked (goleak, in TestMain).
func TestEval_StoppedMasterWhileDialling(t *testing.T) {
	srv := redistest.Start(t, 1, redistest.Ephemeral)
	opt := rueidis.ClientOption{InitAddress: []string{srv[0].Addr()}, DisableCache: true}
	opt.Dialer.Timeout = 500 * time.Millisecond
	dials := rueidisdriver.CountDials(&opt)
	client, err := rueidis.NewClient(opt)
	require.NoError(t, err)
	defer client.Close()
	m, err := rueidisdriver.New(client, rueidisdriver.WithDials(dials))
	require.NoError(t, err)
	require.NoError(t, srv[0].Pause())
	defer srv[0].Resume()

	s := driver.NewScript("one", `return 1`)
	for _, op := range []struct {
		name string
		do   func(ctx context.Context) error
	}{
		{"Eval", func(ctx context.Context) error {
			_, err := m.Eval(ctx, driver.Call{Script: s, Keys: []string{"k"}})
			return err
		}},
		{"Subscribe", func(ctx context.Context) error {
			sub, err := m.Subscribe(ctx)
			if err == nil {
				sub.Close()
			}
			return err
		}},
	} {
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		err := op.do(ctx)
		cancel()
		assert.Error(t, err, op.name)
		assert.Less(t, time.Since(start), 400*time.Millisecond, "%s kept its deadline", op.name)
	}
	// The dials end by rueidis' dial timeout; wait for them before the
	// client closes, so that what they leave is given back or closed.
	time.Sleep(time.Second)
}

// Close leaves the application's client open, unless told to close it.
func TestClose_LeavesTheClientOpen(t *testing.T) {
	srv := redistest.Start(t, 1, redistest.Ephemeral)
	for _, tt := range []struct {
		name   string
		opts   []rueidisdriver.Option
		closed bool
	}{
		{"default", nil, false},
		{"WithCloseClient", []rueidisdriver.Option{rueidisdriver.WithCloseClient()}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			client := standalone(t, srv[0].Addr())
			m, err := rueidisdriver.New(client, tt.opts...)
			require.NoError(t, err)
			require.NoError(t, m.Close())
			err = client.Do(ctxFor(t, time.Second), client.B().Ping().Build()).Error()
			if tt.closed {
				assert.True(t, errors.Is(err, rueidis.ErrClosing), "%v", err)
			} else {
				assert.NoError(t, err)
			}
		})
	}
}

// A call without a script is refused, not a panic.
func TestEval_NoScriptIsInvalid(t *testing.T) {
	srv := redistest.Start(t, 1, redistest.Ephemeral)
	m, err := rueidisdriver.New(standalone(t, srv[0].Addr()))
	require.NoError(t, err)
	_, err = m.Eval(ctxFor(t, time.Second), driver.Call{Keys: []string{"k"}})
	assert.ErrorIs(t, err, rueidisdriver.ErrInvalid)
}
