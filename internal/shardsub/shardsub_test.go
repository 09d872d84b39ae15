package shardsub

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/internal/slot"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var errClosed = errors.New("test: closed")

// key returns a key of slot s.
func key(t *testing.T, name string, s int) string {
	t.Helper()
	tag, err := slot.TagFor(s)
	require.NoError(t, err)
	return name + "{" + tag + "}"
}

func TestBySlot_GroupsBySlotInOrder(t *testing.T) {
	a1, a2, b1 := "x{a}1", "x{a}2", "x{b}1"
	for _, tc := range []struct {
		name     string
		channels []string
		want     [][]string
	}{
		{"none", nil, nil},
		{"one", []string{a1}, [][]string{{a1}}},
		{"one slot", []string{a1, a2}, [][]string{{a1, a2}}},
		{"interleaved", []string{a1, b1, a2}, [][]string{{a1, a2}, {b1}}},
		{"first seen first", []string{b1, a1, a2}, [][]string{{b1}, {a1, a2}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, bySlot(tc.channels))
		})
	}
}

// The fakes below stand for a driver's client; what is under test is the
// subscription's bookkeeping over them.

// fakeCluster puts slots below 8192 on master "a", the others on "b".
type fakeCluster struct {
	mu      sync.Mutex
	conns   map[string]*fakeConn
	dials   map[string]int
	reloads int
	failOn  string // a command every connection refuses
}

func newFakeCluster() *fakeCluster {
	return &fakeCluster{conns: map[string]*fakeConn{}, dials: map[string]int{}}
}

func (c *fakeCluster) Master(_ context.Context, channel string) (Shard, error) {
	addr := "a"
	if slot.Of(channel) >= slot.Count/2 {
		addr = "b"
	}
	return Shard{Addr: addr, Dial: func(context.Context) (Conn, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.dials[addr]++
		conn := &fakeConn{failOn: c.failOn, pushes: make(chan driver.Message, 16), closed: make(chan struct{})}
		c.conns[addr] = conn
		return conn, nil
	}}, nil
}

func (c *fakeCluster) Reload() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reloads++
}

func (c *fakeCluster) conn(addr string) *fakeConn {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.conns[addr]
}

// fakeConn confirms what it is sent, as a master does, and records it.
type fakeConn struct {
	failOn string

	mu     sync.Mutex
	sent   [][]string
	pushes chan driver.Message
	once   sync.Once
	closed chan struct{}
}

func (c *fakeConn) send(cmd string, kind driver.Kind, channels []string) error {
	if cmd == c.failOn {
		return fmt.Errorf("%s refused", cmd)
	}
	c.mu.Lock()
	c.sent = append(c.sent, append([]string{cmd}, channels...))
	c.mu.Unlock()
	for _, ch := range channels {
		c.pushes <- driver.Message{Kind: kind, Channel: ch}
	}
	return nil
}

func (c *fakeConn) SSubscribe(_ context.Context, channels ...string) error {
	return c.send("SSUBSCRIBE", driver.Subscribed, channels)
}

func (c *fakeConn) SUnsubscribe(_ context.Context, channels ...string) error {
	return c.send("SUNSUBSCRIBE", driver.Unsubscribed, channels)
}

func (c *fakeConn) Receive() (driver.Message, error) {
	select {
	case m := <-c.pushes:
		return m, nil
	case <-c.closed:
		return driver.Message{}, errors.New("connection closed")
	}
}

func (c *fakeConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

func (c *fakeConn) commands() [][]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([][]string(nil), c.sent...)
}

// receive returns the subscription's next event, within a second.
func receive(t *testing.T, sub driver.Subscription) (driver.Message, error) {
	t.Helper()
	type got struct {
		m   driver.Message
		err error
	}
	c := make(chan got, 1)
	go func() {
		m, err := sub.Receive()
		c <- got{m, err}
	}()
	select {
	case g := <-c:
		return g.m, g.err
	case <-time.After(time.Second):
		sub.Close() // ends the Receive
		<-c
		t.Fatal("Receive returned nothing within 1s")
		return driver.Message{}, nil
	}
}

func TestSubscription_OneConnectionPerMaster_OneSSubscribePerSlot(t *testing.T) {
	c := newFakeCluster()
	sub := New(c, Options{Name: "test", Closed: errClosed})
	defer sub.Close()
	a1, a2, a3 := key(t, "a1", 10), key(t, "a2", 10), key(t, "a3", 11)
	b1 := key(t, "b1", 9000)
	require.NoError(t, sub.Subscribe(a1, b1, a3, a2))
	var confirmed []string
	for range 4 {
		m, err := receive(t, sub)
		require.NoError(t, err)
		assert.Equal(t, driver.Subscribed, m.Kind)
		confirmed = append(confirmed, m.Channel)
	}
	assert.ElementsMatch(t, []string{a1, a2, a3, b1}, confirmed)
	assert.Equal(t, map[string]int{"a": 1, "b": 1}, c.dials)
	assert.Equal(t, [][]string{{"SSUBSCRIBE", a1, a2}, {"SSUBSCRIBE", a3}}, c.conn("a").commands())
	assert.Equal(t, [][]string{{"SSUBSCRIBE", b1}}, c.conn("b").commands())
}

func TestSubscription_Unsubscribe(t *testing.T) {
	for _, tc := range []struct {
		name string
		// unasked: the master drops the channel by itself.
		unasked  bool
		wantMsg  driver.Message
		wantErr  string
		reloaded int
	}{
		{name: "asked is confirmed", wantMsg: driver.Message{Kind: driver.Unsubscribed, Channel: "ch{x}"}},
		{name: "unasked ends the subscription", unasked: true, wantErr: "dropped the subscription", reloaded: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newFakeCluster()
			sub := New(c, Options{Name: "test", Closed: errClosed})
			defer sub.Close()
			require.NoError(t, sub.Subscribe("ch{x}"))
			_, err := receive(t, sub)
			require.NoError(t, err)
			conn := c.conn("a")
			if slot.Of("ch{x}") >= slot.Count/2 {
				conn = c.conn("b")
			}
			if tc.unasked {
				conn.pushes <- driver.Message{Kind: driver.Unsubscribed, Channel: "ch{x}"}
			} else {
				require.NoError(t, sub.Unsubscribe("ch{x}"))
			}
			m, err := receive(t, sub)
			if tc.wantErr != "" {
				assert.ErrorContains(t, err, tc.wantErr)
				_, err = receive(t, sub)
				assert.ErrorIs(t, err, errClosed, "ended for good")
			} else {
				assert.NoError(t, err)
				assert.Equal(t, tc.wantMsg, m)
			}
			assert.Equal(t, tc.reloaded, c.reloads, "the slot map is read again after a failure")
		})
	}
}

func TestSubscription_NeverSubscribed_IsConfirmedAtOnce(t *testing.T) {
	c := newFakeCluster()
	sub := New(c, Options{Name: "test", Closed: errClosed})
	defer sub.Close()
	require.NoError(t, sub.Unsubscribe("never", "nor{this}"))
	for _, ch := range []string{"never", "nor{this}"} {
		m, err := receive(t, sub)
		require.NoError(t, err)
		assert.Equal(t, driver.Message{Kind: driver.Unsubscribed, Channel: ch}, m)
	}
	assert.Empty(t, c.dials, "no connection for it")
}

func TestSubscription_AFailedWrite_EndsReceive(t *testing.T) {
	for _, cmd := range []string{"SSUBSCRIBE", "SUNSUBSCRIBE"} {
		t.Run(cmd, func(t *testing.T) {
			c := newFakeCluster()
			c.failOn = cmd
			sub := New(c, Options{Name: "test", Closed: errClosed})
			defer sub.Close()
			var err error
			if err = sub.Subscribe("ch"); err == nil {
				_, err = receive(t, sub)
				require.NoError(t, err)
				err = sub.Unsubscribe("ch")
			}
			require.ErrorContains(t, err, cmd+" refused")
			_, err = receive(t, sub)
			assert.ErrorContains(t, err, cmd+" refused", "Receive reports it, for a caller who watches only Receive")
			assert.Equal(t, 1, c.reloads)
			assert.ErrorIs(t, sub.Subscribe("other"), errClosed)
		})
	}
}

func TestSubscription_Close_EndsReceiveAndClosesEveryConnection(t *testing.T) {
	c := newFakeCluster()
	sub := New(c, Options{Name: "test", Closed: errClosed})
	require.NoError(t, sub.Subscribe(key(t, "a", 1), key(t, "b", 9000)))
	for range 2 {
		_, err := receive(t, sub)
		require.NoError(t, err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := sub.Receive()
		done <- err
	}()
	require.NoError(t, sub.Close())
	select {
	case err := <-done:
		assert.ErrorIs(t, err, errClosed)
	case <-time.After(time.Second):
		t.Fatal("Close did not end Receive")
	}
	for _, addr := range []string{"a", "b"} {
		select {
		case <-c.conn(addr).closed:
		default:
			t.Errorf("%s's connection is open", addr)
		}
	}
	assert.NoError(t, sub.Close(), "twice is fine")
	assert.Zero(t, c.reloads, "closing is no failure")
}
