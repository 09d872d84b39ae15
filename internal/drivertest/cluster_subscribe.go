package drivertest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/internal/redistest"
)

// RunClusterPubSub checks a cluster driver's subscriptions on a Redis
// Cluster of three shards: Sharded reports true, and Subscribe gives a
// subscription over sharded pub/sub (SSUBSCRIBE on the master of each
// channel's slot) that hears SPUBLISH on every shard, and that ends, so
// that the lock subscribes again, when a shard's connection drops or a
// channel's slot moves to another master. RunCluster runs the same
// subtests.
func RunClusterPubSub(t *testing.T, newDriver NewCluster) {
	c := redistest.StartCluster(t, redistest.ClusterOptions{})
	t.Run("ShardedSubscriptionOnEveryShard", func(t *testing.T) { shardedSubscriptionOnEveryShard(t, c, newDriver) })
	t.Run("ChannelsOfManySlotsOnOneShard", func(t *testing.T) { channelsOfManySlotsOnOneShard(t, c, newDriver) })
	t.Run("SubscriptionEndsWithAShardsConnection", func(t *testing.T) { subscriptionEndsWithAShardsConnection(t, c, newDriver) })
	t.Run("SubscriptionEndsWhenItsSlotMoves", func(t *testing.T) { subscriptionEndsWhenItsSlotMoves(t, c, newDriver) })
}

// shardedSubscriptionOnEveryShard: one subscription hears SPUBLISH on each
// shard, each channel subscribed on its slot's master and there only.
func shardedSubscriptionOnEveryShard(t *testing.T, shared *redistest.Cluster, newDriver NewCluster) {
	d := openCluster(t, shared, newDriver)
	require.True(t, d.Sharded(), "a cluster driver announces and listens with sharded pub/sub")
	slots, masters := spread(t, shared)
	sub, err := d.Subscribe(ctxFor(t, 5*time.Second))
	require.NoError(t, err)
	got, done := receive(sub)
	var chans []string
	for _, s := range slots {
		chans = append(chans, keyIn(t, "release", s))
	}
	subscribeAll(t, sub, got, chans)
	for i, ch := range chans {
		heard(t, got, masters[i], ch)
	}
	require.NoError(t, sub.Unsubscribe(chans[1]))
	assert.Equal(t, driver.Message{Kind: driver.Unsubscribed, Channel: chans[1]}, next(t, got))
	n, err := redistest.DoAt(masters[1], "SPUBLISH", chans[1], "x")
	require.NoError(t, err)
	assert.Equal(t, "0", n, "unsubscribed on its master")
	closeEndsReceive(t, sub, done)
	for i, ch := range chans {
		n, err := redistest.DoAt(masters[i], "SPUBLISH", ch, "x")
		require.NoError(t, err)
		assert.Equal(t, "0", n, "%s: closed", masters[i])
	}
}

// channelsOfManySlotsOnOneShard: channels of several slots of one master,
// in one Subscribe, are all confirmed and heard (Redis refuses an
// SSUBSCRIBE whose channels are in different slots).
func channelsOfManySlotsOnOneShard(t *testing.T, c *redistest.Cluster, newDriver NewCluster) {
	d := openCluster(t, c, newDriver)
	master, err := c.MasterFor(1)
	require.NoError(t, err)
	var chans []string
	for s := 1; len(chans) < 3; s++ {
		m, err := c.MasterFor(s)
		require.NoError(t, err)
		if m == master {
			chans = append(chans, keyIn(t, "many", s))
		}
	}
	sub, err := d.Subscribe(ctxFor(t, 5*time.Second))
	require.NoError(t, err)
	defer sub.Close()
	got, _ := receive(sub)
	subscribeAll(t, sub, got, chans)
	for _, ch := range chans {
		heard(t, got, master, ch)
	}
	never := keyIn(t, "never", 2)
	require.NoError(t, sub.Unsubscribe(never))
	assert.Equal(t, driver.Message{Kind: driver.Unsubscribed, Channel: never}, next(t, got), "a channel never subscribed is confirmed at once")
}

// subscriptionEndsWithAShardsConnection: when one shard master drops the
// subscription's connection, Receive fails, as the announcements made
// meanwhile were lost, rather than the driver subscribing again in silence.
func subscriptionEndsWithAShardsConnection(t *testing.T, c *redistest.Cluster, newDriver NewCluster) {
	d := openCluster(t, c, newDriver)
	slots, masters := spread(t, c)
	sub, err := d.Subscribe(ctxFor(t, 5*time.Second))
	require.NoError(t, err)
	defer sub.Close()
	got, done := receive(sub)
	var chans []string
	for _, s := range slots {
		chans = append(chans, keyIn(t, "dropped", s))
	}
	subscribeAll(t, sub, got, chans)
	killed := killShardedSubscribers(t, masters[1])
	require.GreaterOrEqual(t, killed, 1, "%s has the subscription's connection", masters[1])
	ends(t, got, done, "the dropped connection")
}

// killShardedSubscribers closes the connections of the master at addr that
// have sharded subscriptions, and returns how many it closed. (CLIENT KILL
// TYPE PUBSUB misses RESP3 connections.)
func killShardedSubscribers(t *testing.T, addr string) int {
	t.Helper()
	list, err := redistest.DoAt(addr, "CLIENT", "LIST")
	require.NoError(t, err)
	killed := 0
	for _, line := range strings.Split(list, "\n") {
		var id string
		sharded := false
		for _, field := range strings.Fields(line) {
			k, v, _ := strings.Cut(field, "=")
			switch {
			case k == "id":
				id = v
			case k == "ssub" && v != "0":
				sharded = true
			}
		}
		if sharded {
			_, err := redistest.DoAt(addr, "CLIENT", "KILL", "ID", id)
			require.NoError(t, err, fmt.Sprintf("CLIENT KILL ID %s", id))
			killed++
		}
	}
	return killed
}

// subscriptionEndsWhenItsSlotMoves: Redis drops the sharded subscriptions
// of a slot that moves to another master (SUNSUBSCRIBE, unasked); Receive
// fails, so that the caller subscribes again, on the new owner.
func subscriptionEndsWhenItsSlotMoves(t *testing.T, moving *redistest.Cluster, newDriver NewCluster) {
	d := openCluster(t, moving, newDriver)
	const s = 200
	_, to := ownerAndAnother(t, moving, s)
	sub, err := d.Subscribe(ctxFor(t, 5*time.Second))
	require.NoError(t, err)
	defer sub.Close()
	got, done := receive(sub)
	ch := keyIn(t, "release", s)
	require.NoError(t, sub.Subscribe(ch))
	assert.Equal(t, driver.Message{Kind: driver.Subscribed, Channel: ch}, next(t, got))
	setSlot(t, moving, s, to)
	ends(t, got, done, "the moved channel")

	// Subscribing again, as the lock does after a pause, reaches the new
	// owner once the driver has read where the slot went.
	var last error
	for try := 0; try < 50; try++ {
		if last = subscribeOn(t, d, ch); last == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.NoError(t, last, "no subscription reached the slot's new master within 5s")
	n, err := redistest.DoAt(to, "SPUBLISH", ch, "x")
	require.NoError(t, err)
	assert.Equal(t, "1", n, "%s, the slot's new master, has the sharded subscriber", to)
}

// subscribeOn opens a subscription to ch and returns nil once it is
// confirmed, leaving it open until the test ends; or the error that ended
// it, closed.
func subscribeOn(t *testing.T, d driver.Master, ch string) error {
	t.Helper()
	sub, err := d.Subscribe(ctxFor(t, 2*time.Second))
	if err != nil {
		return err
	}
	got, done := receive(sub)
	if err := sub.Subscribe(ch); err != nil {
		sub.Close()
		<-done
		return err
	}
	select {
	case m := <-got:
		if m != (driver.Message{Kind: driver.Subscribed, Channel: ch}) {
			sub.Close()
			<-done
			return fmt.Errorf("got %v, want the subscription confirmed", m)
		}
		t.Cleanup(func() { sub.Close(); <-done })
		return nil
	case err := <-done:
		sub.Close()
		return err
	case <-time.After(2 * time.Second):
		sub.Close()
		<-done
		return fmt.Errorf("no confirmation within 2s")
	}
}
