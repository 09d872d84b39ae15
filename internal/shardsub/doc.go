// Package shardsub is a Redis Cluster driver's subscription to release
// announcements over sharded pub/sub (SSUBSCRIBE), whatever the client
// library: the logic every cluster driver shares, over a small interface
// each implements with its client.
//
// A subscription routes each channel by its hash slot to the shard master
// that owns it, as the driver's slot map has it (Cluster), and keeps one
// connection per shard master (Conn), opened as channels of its slots are
// subscribed. Redis takes the channels of one slot only in one SSUBSCRIBE,
// so channels are sent grouped by slot.
//
// The subscription ends, for good, with the first failure of any of its
// connections, a write that fails (such as a MOVED from a master that no
// longer owns the slot), or a master dropping a channel by itself: Redis
// sends SUNSUBSCRIBE, unasked, for every channel of a slot that moves to
// another master, in a failover or a resharding. Announcements made
// meanwhile were lost, so rather than subscribing again in silence,
// Receive returns the error, and the driver reads its slot map again: the
// lock subscribes again, on a new subscription, which reaches the new
// owners.
package shardsub
