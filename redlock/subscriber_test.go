package redlock

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/driver"
)

// Masters that drop their pub/sub connection and come back confirm the
// subscription again; that must neither panic nor leave the waiter deaf.
func TestHub_ConfirmationsAfterReconnect(t *testing.T) {
	c, _, _ := newFakeClient(t, make([]behaviour, 5), WithRestartGuard(0))
	h := c.hub
	w := h.join("k", time.Second, lockOptions{}, nil)
	defer w.leave(false)
	for round := range 3 {
		for i := range 5 {
			h.confirm(i, "k", true)
		}
		assert.Equal(t, 5, w.q.nconf, "round %d", round)
		for i := range 3 {
			h.disconnected(i)
		}
		assert.Equal(t, 2, w.q.nconf, "round %d: two of five cannot hear every quorum", round)
	}
	w.ready(context.Background(), time.Millisecond) // ready stays closed: no wait
}

func TestNodeError_NilCause(t *testing.T) {
	assert.Equal(t, "redlock: node 1 (a): <nil>", (&NodeError{Node: 1, Addr: "a"}).Error())
	assert.Equal(t, "redlock: node 1 (a): held by another owner", (&NodeError{Node: 1, Addr: "a", Err: ErrHeld}).Error())
}

// A write on a subscription can wait on a master that answers nothing:
// go-redis reconnects a PubSub inside its Subscribe, holding it for its own
// dial and read timeouts. Lock subscribes under the client's hub lock, so
// such a write must not be waited for there: a Lock ends by its ctx, and
// so does every other Lock of the client.
func TestIntegration_Lock_DoesNotWaitForASubscriptionWrite(t *testing.T) {
	srv := masters(t, 3)
	hung := &hungSubscriptions{}
	ms := drivers(t, srv)
	hung.Master, ms[0] = ms[0], hung
	c, err := New(ms, suite(WithRestartGuard(0), WithLogger(quiet()), WithCloseDrivers())()...)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	holder := client(t, srv)
	for _, key := range []string{"a", "b", "c"} {
		_, err := holder.TryLock(context.Background(), key, 10*time.Second)
		require.NoError(t, err)
	}
	lock := func(key string) (time.Duration, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := c.Lock(ctx, key, time.Second)
		return time.Since(start), err
	}
	_, err = lock("a") // the subscriptions come up
	require.ErrorIs(t, err, ErrNotObtained)
	require.Eventually(t, func() bool {
		s := c.hub.subs[0]
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.conn != nil
	}, 5*time.Second, 10*time.Millisecond, "master 0's subscription is up")

	hung.hang.Store(true)
	var wg sync.WaitGroup
	for _, key := range []string{"b", "c"} {
		wg.Go(func() {
			took, err := lock(key)
			assert.ErrorIs(t, err, ErrNotObtained, key)
			assert.Less(t, took, time.Second, "%s: Lock waited for a subscription write past its ctx", key)
		})
	}
	wg.Wait()
}

// hungSubscriptions is a driver.Master whose subscriptions' writes, once
// hang is set, wait until the subscription is closed, at most 5 s.
type hungSubscriptions struct {
	driver.Master
	hang atomic.Bool
}

func (m *hungSubscriptions) Subscribe(ctx context.Context) (driver.Subscription, error) {
	sub, err := m.Master.Subscribe(ctx)
	if err != nil {
		return nil, err
	}
	return &hungSubscription{Subscription: sub, hang: &m.hang, closed: make(chan struct{})}, nil
}

type hungSubscription struct {
	driver.Subscription
	hang   *atomic.Bool
	once   sync.Once
	closed chan struct{}
}

func (s *hungSubscription) wait() {
	if s.hang.Load() {
		select {
		case <-s.closed:
		case <-time.After(5 * time.Second):
		}
	}
}

func (s *hungSubscription) Subscribe(channels ...string) error {
	s.wait()
	return s.Subscription.Subscribe(channels...)
}

func (s *hungSubscription) Unsubscribe(channels ...string) error {
	s.wait()
	return s.Subscription.Unsubscribe(channels...)
}

func (s *hungSubscription) Close() error {
	s.once.Do(func() { close(s.closed) })
	return s.Subscription.Close()
}

// Stopping a subscriber closes its connection, which can wait on a master
// that answers nothing (go-redis's PubSub.Close waits for a reconnect
// under way). Meanwhile the Lock path, which takes the subscriber's lock to
// subscribe or to see whether it is connected, goes on.
func TestSubscriber_StopDoesNotHoldItsLockThroughAClose(t *testing.T) {
	s := newSubscriber(nil, 0, nil)
	closing, release := make(chan struct{}), make(chan struct{})
	s.conn = &slowClose{closing: closing, release: release}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		s.stop()
	}()
	<-closing
	subscribed := make(chan struct{})
	go func() {
		defer close(subscribed)
		s.subscribe("ch")
	}()
	select {
	case <-subscribed:
	case <-time.After(time.Second):
		t.Error("subscribe waited for the connection's Close")
	}
	close(release)
	<-stopped
	<-subscribed
	s.mu.Lock()
	defer s.mu.Unlock()
	assert.True(t, s.stopped)
}

// slowClose is a subscription whose Close waits until release is closed.
type slowClose struct {
	driver.Subscription
	closing, release chan struct{}
}

func (c *slowClose) Close() error {
	close(c.closing)
	<-c.release
	return nil
}

// Closing a subscription can wait on its master (go-redis's PubSub.Close
// waits for a reconnect under way, up to its dial timeout). Close stops
// every master's subscriber at once, so it waits for the slowest such
// close, not for their sum.
func TestIntegration_Close_StopsTheSubscribersAtOnce(t *testing.T) {
	srv := masters(t, 3)
	ms := drivers(t, srv)
	for i := range ms {
		ms[i] = &slowClosing{Master: ms[i]}
	}
	c, err := New(ms, suite(WithRestartGuard(0), WithLogger(quiet()), WithCloseDrivers())()...)
	require.NoError(t, err)
	holder := client(t, srv)
	_, err = holder.TryLock(context.Background(), "k", 10*time.Second)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = c.Lock(ctx, "k", time.Second) // the subscriptions come up
	require.ErrorIs(t, err, ErrNotObtained)
	require.Eventually(t, func() bool {
		for _, s := range c.hub.subs {
			s.mu.Lock()
			up := s.conn != nil
			s.mu.Unlock()
			if !up {
				return false
			}
		}
		return true
	}, 5*time.Second, 10*time.Millisecond, "every master's subscription is up")

	start := time.Now()
	require.NoError(t, c.Close())
	took := time.Since(start)
	assert.GreaterOrEqual(t, took, slowSubscriptionClose, "a subscription's close was not waited for")
	assert.Less(t, took, 2*slowSubscriptionClose, "Close waited for the subscriptions' closes one after another")
}

// slowSubscriptionClose is how long a slowClosing master's subscription
// takes to close.
const slowSubscriptionClose = 600 * time.Millisecond

// slowClosing is a driver.Master whose subscriptions take
// slowSubscriptionClose to close.
type slowClosing struct{ driver.Master }

func (m *slowClosing) Subscribe(ctx context.Context) (driver.Subscription, error) {
	sub, err := m.Master.Subscribe(ctx)
	if err != nil {
		return nil, err
	}
	return &slowClosingSubscription{sub}, nil
}

type slowClosingSubscription struct{ driver.Subscription }

func (s *slowClosingSubscription) Close() error {
	time.Sleep(slowSubscriptionClose)
	return s.Subscription.Close()
}
