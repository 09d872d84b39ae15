// Package goredis lets the lock use go-redis v9 clients that an application
// already has: New wraps a *redis.Client (one master, or a Sentinel failover
// client) or a *redis.ClusterClient as a driver.Master, and redlock.New takes
// one per master:
//
//	import (
//		"github.com/redis/go-redis/v9"
//
//		"github.com/quorumlock/quorumlock/driver"
//		"github.com/quorumlock/quorumlock/driver/goredis"
//		"github.com/quorumlock/quorumlock/redlock"
//	)
//
//	m, err := goredis.New(redis.NewClient(&redis.Options{Addr: "10.0.0.7:6379"}))
//	...
//	c, err := redlock.New([]driver.Master{m1, m2, m3})
//
// It is a module of its own, github.com/quorumlock/quorumlock/driver/goredis
// (go get it beside the library), so that users of the default driver
// never download go-redis.
//
// # The client's options are the lock's
//
// The adapter sends everything through the client as given. Its address,
// TLS configuration, ACL user and password (or credentials provider), pool
// and protocol (RESP2 or RESP3) are the lock's: the ACL user needs what the
// least-privilege user of docs/production.md has. Its database number (DB)
// is where the lock's keys live: every client of one lock must use the
// same one, and a cluster has only database 0. Its timeouts and retries
// bound each call together with the lock's node timeout: see Deadlines.
//
// New adds a hook to the client that counts the connections it opens, and
// for a cluster client one to each node client, through OnNewNode; hooks
// cannot be removed, so they stay after Close, counting on. Close leaves
// the client open, unless WithCloseClient was given.
//
// Each call holds one connection of the client's pool for its whole length
// (Client.Conn), so the client's retries (MaxRetries) never move a command
// to another connection. Before its first call through Client.Conn, the
// adapter sends one PING through the client itself: a RESP3 client writes
// its options while its first connections come up, and a Conn setting up a
// connection at the same moment would race with that inside go-redis.
// Setting up a connection costs go-redis a few round trips (HELLO, the
// maintenance-notifications handshake, CLIENT SETINFO); a lock client can
// spare the last two with MaintNotificationsConfig's Mode set to disabled
// and DisableIdentity.
//
// # How the restart guard sees a new server
//
// The guard reads a master's health (run_id, uptime, role, persistence,
// eviction policy) on each connection that may lead to another server
// process than the last answers came from, ahead of the script, in the
// same round trip. A redigo pool counts its dials and reads the count
// once a call has its connection. go-redis hands out a connection inside
// the command, so the adapter counts dials with a dial hook and reads the
// count before a call and again after it. When the count is unchanged,
// the call's connection was opened before the call began, and the questions
// went or not as the guard asked. When it moved and the questions did not
// go, the call's connection may be new; the adapter then asks them after
// the script, on the same connection (Client.Conn keeps one connection for
// the whole call), and returns the answers with the script's reply. The
// vote is therefore never counted before the guard has read the server
// that cast it. This costs one more round trip, only when some connection
// to that server was opened during the call.
//
// # Deadlines
//
// Each call runs on a goroutine of its own and returns by its ctx's
// deadline, even if the master is stopped. go-redis is given a ctx that is
// cancelled with the caller's, so that nothing waits for a connection once
// the caller has left, but whose deadline is one second later: a client with
// ContextTimeoutEnabled bounds its reads and writes by that, any other by
// its ReadTimeout and WriteTimeout (5 s by default). A reply that comes
// after the caller has returned is still read, and its connection goes back
// to the pool clean, instead of being dropped with its setup (HELLO, AUTH,
// CLIENT SETINFO) that every later call would have to pay for again: under
// load, with node timeouts of tens of milliseconds, that is the difference
// between a slow master and one that never answers in time. A later call
// never reads an earlier call's reply. Close waits for such goroutines.
//
// # Clusters
//
// A call to a cluster client goes to the master of its first key's slot, as
// the client knows the cluster; the guard's questions go to that master on
// the same connection, and the call tells the guard the master's address
// (driver.Call.Check, driver.Reply.Server). A MOVED or ASK reply (a slot
// moving during resharding) ran nothing: the call fails with ErrRedirected,
// a missing vote, and the next one is routed anew. A cluster runs a script
// only when every key it touches shares the slot of the first; otherwise it
// answers CROSSSLOT, and the lock reports the master as misconfigured.
//
// Releases are announced with sharded pub/sub (SPUBLISH, in the slot of the
// lock key's channel), which keeps each announcement on its shard, and
// Sharded reports true. A subscription holds one SSUBSCRIBE connection per
// shard master, a go-redis PubSub of that master's node client, and sends
// each channel to the master of its slot as the client knows the cluster.
// Its Receive fails, and the lock subscribes again on a new subscription,
// when one of those connections fails (go-redis would reconnect it in
// silence, and the announcements made meanwhile would be lost), when a
// master refuses a channel whose slot it no longer owns (MOVED), and when a
// master drops a channel by itself, which Redis does when the channel's
// slot moves to another master (an unasked SUNSUBSCRIBE). The client then
// reads the cluster's slots again, so that the new subscription reaches the
// new owner.
//
// A client of one server, standalone or Sentinel, subscribes with classic
// pub/sub (SUBSCRIBE) on one connection, and Sharded reports false.
package goredis
