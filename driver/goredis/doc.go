// Package goredis lets the lock use go-redis v9 clients that an application
// already has. NewClient builds a lock client over them, one master per
// client; New wraps one *redis.Client (one master, or a Sentinel failover
// client, which needs WithName) or *redis.ClusterClient as a
// driver.Master, for redlock.New:
//
//	import (
//		"github.com/redis/go-redis/v9"
//
//		"github.com/quorumlock/quorumlock/driver/goredis"
//	)
//
//	c, err := goredis.NewClient([]redis.UniversalClient{rdb1, rdb2, rdb3})
//	...
//	defer c.Close() // closes what the lock holds; rdb1..3 stay open
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
// Close leaves the client open, unless WithCloseClient was given.
//
// # Calls share a connection
//
// A go-redis client sends a command on a connection of its pool and waits
// for the reply before the connection serves another. The adapter instead
// holds one connection of each master's (Client.Conn: one connection of
// the client's pool, for as long as the adapter keeps it), and calls
// coalesce: those made while the connection's batch is out go together in
// its next batch, one pipelined round trip.
// Replies are read in order and matched to their calls by their place in
// the batch. A script the server has not cached (NOSCRIPT) is sent by its
// source next, on the same connection. The client's retries (MaxRetries)
// never move a batch to another connection: a Conn whose connection
// failed refuses every later command. Close gives the connections back to
// the client's pool.
//
// Before its first connection, the adapter sends one PING through the
// client itself: a RESP3 client writes its options while its first
// connections come up, and a Conn setting up a connection at the same
// moment would race with that inside go-redis. Setting up a connection
// costs go-redis a few round trips (HELLO, the maintenance-notifications
// handshake, CLIENT SETINFO); a lock client can spare the last two with
// MaintNotificationsConfig's Mode set to disabled and DisableIdentity.
//
// # How the restart guard sees a new server
//
// The guard reads a master's health (run_id, uptime, role, persistence,
// eviction policy) on each connection that may lead to another server
// process than the last answers came from, ahead of the script, in the
// same round trip. A connection is one server process for its whole life:
// the adapter asks on each of its connections until a call that carried
// the questions on it has returned their answers to the lock, its
// done.Returned included. Until then every call on it that has a check
// carries the questions, those of one batch once for all; after that,
// only calls whose check asks always. A call whose answers never reached
// the lock (it failed, or its deadline came first) leaves the connection
// fresh. A new connection, after one was dropped or for a cluster's new
// node client, is fresh.
//
// # Deadlines
//
// Each call returns by its ctx's deadline, even if its batch is still out,
// as on a stopped master. The batch itself is bounded by the latest
// deadline of its calls plus one second (a client with
// ContextTimeoutEnabled bounds its reads and writes by that, any other by
// its ReadTimeout and WriteTimeout, 5 s by default), so that a reply that
// comes somewhat late is still read and the connection kept, with its
// setup (HELLO, AUTH, CLIENT SETINFO). When a call reaches its deadline
// and nothing came back on its connection while it waited, the master may
// be hung: the connection takes no new call until its batch comes back,
// and one whose batch fails, timing out included, is dropped. Meanwhile
// calls go on a new connection; of those, one at a time is opened, so a
// master that hangs sees no storm of connections. A server that refuses
// connections (a password missing or wrong, maxclients reached: a
// connection that fails before it served a call) gets the next one 50 ms
// later, then twice as long each time up to 1 s, until a call is served;
// the calls meanwhile fail at once with its refusal (NOAUTH, WRONGPASS). A
// timeout, or a dial refused because nothing listens, is not a refusal
// (see driver.Refused). Close waits for batches still out.
//
// # Clusters
//
// A call to a cluster client goes to the master of its first key's slot, as
// the client knows the cluster, on connections of that node's client,
// batched as for one master; the guard's questions go to that master on
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
