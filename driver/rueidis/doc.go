// Package rueidisdriver lets the lock use rueidis clients the application
// already has: NewClient builds a lock client over them in one call, one
// master per client; New wraps one rueidis.Client, standalone, Sentinel or
// Redis Cluster, as one driver.Master, for redlock.New, with options of its
// own (WithName, WithTimeout, WithCloseClient).
//
// # Import
//
// The package is a module of its own, so that users of another client
// library never download rueidis:
//
//	go get github.com/quorumlock/quorumlock/driver/rueidis
//
//	import rueidisdriver "github.com/quorumlock/quorumlock/driver/rueidis"
//
// Its name is rueidisdriver, not rueidis, so that it and rueidis itself
// can be imported side by side without renaming either; the alias above
// only says so at the import.
//
// # The client is the application's
//
// The lock uses the client as it was built: its addresses, TLS
// configuration (TLSConfig, mutual TLS included), ACL user and password
// (Username, Password), database (SelectDB), timeouts and client name. The
// lock's keys go to the client's database, and the user needs the
// commands the lock sends: its scripts (EVALSHA, EVAL), and for the
// restart guard INFO, CONFIG GET and GET, plus CLUSTER SLOTS on a cluster.
// The lock holds one connection of the client's per server (see below),
// which its Close gives back; Close leaves the client open, as the
// application may go on using it, and WithCloseClient has Close close it
// too. Close the lock before the client: a connection the lock still holds
// when the client closes stays open until the lock's Close.
//
// # One connection per server, pipelined
//
// Each master holds one dedicated connection of the client's per server
// (Client.Dedicate), taken in the background by New for a standalone or
// Sentinel master and on first use for a cluster's shard master, and sends
// every call to that server on it, from any number of goroutines at once.
// One DoMulti at a time is in flight on it: the calls that come meanwhile
// wait, and go out together in the next, in one write, which the master
// reads in one go; and rueidis writes and reads a connection used one call
// at a time on the caller's goroutine, with no writer and reader goroutines
// of its own between. No call dials or waits for a connection of a pool. On a
// standalone or Sentinel master, the calls the lock starts (Start) are
// queued for the connection's sender goroutine, which hands each reply
// over when it comes, with no goroutine waiting for it; on a cluster, a
// goroutine runs each call.
//
// # How the restart guard sees a restart
//
// The guard reads a master's health (run_id, uptime, role, persistence,
// eviction policy) on any connection that may reach a server process it has
// not read yet, in the same round trip as the script, so that a master that
// restarted empty does not vote before the guard knows. A connection rueidis
// has handed out is never dialled again: it reaches one server process for
// its whole life, and dies with it. So the guard's questions go ahead of the
// script, in the same DoMulti, on every call on a fresh connection (see
// driver.Check.Due): one that no call has yet returned the answers of, its
// done included. That is the first connection, and each one that replaces a
// connection found dead, as after a restart; calls that overlap on a fresh
// connection all ask. A connection becomes answered only once the done that
// took its answers has returned, so the lock has taken them before any call
// on it goes without questions; a call whose answers are not handed over
// (it failed before they came, or met a MOVED) leaves it fresh. rueidis
// writes a DoMulti as one batch on the connection and reads its replies in
// order, so the answers and the script's reply come from the same server
// process. A connection that fails other than by the call's deadline or a
// reply of the master's, or that answers READONLY (its server is a replica
// now, as after a Sentinel failover), is closed, and the next call takes a
// new one; a call that found its connection dead before it went out is
// tried again on a new one, within its deadline.
//
// A server may refuse every connection: a password missing or wrong,
// maxclients reached. rueidis then hands out a connection whose setup
// failed, and its calls fail with why. A connection closed before it
// served a call puts off taking the next one, 50 ms at first, doubling up
// to 1 s, until one serves; the calls meanwhile fail at once with the
// refusal, an error reply to the setup (NOAUTH, WRONGPASS) as a
// driver.Error. A timeout, or a dial refused because nothing listens, is
// not a refusal (see driver.Refused).
//
// The client's shared connections give no such sign: rueidis replaces them
// by itself, and a client built elsewhere offers no hook to see it
// (ClientOption.DialCtxFn is read only when the client is built). Holding
// the connection makes that hook unnecessary.
//
// # Deadlines
//
// Eval returns at its ctx's deadline, or after WithTimeout when its ctx
// has none. Start hands done the call's deadline error once its batch has
// returned, which lasts until the latest deadline of its calls, started
// within a round trip of each other. A call whose deadline has passed
// before its batch goes out is not sent. Replies are read in order, one per
// command of the batch, so a reply that arrives after its call gave up is
// dropped, never given to a later call. When the deadline of a DoMulti
// alone on the connection passes with no reply, rueidis closes the
// connection (pipe.syncDoMulti), and the next call takes a new one, with
// the guard's questions. A connection that rueidis is still dialling when the ctx ends
// serves the next call; one for a subscription is closed once it arrives.
//
// # Redis Cluster
//
// On a cluster client, a call goes to the master that owns its keys' slot,
// read from the cluster's slot map (CLUSTER SLOTS), with the guard's
// questions through that node's client (Client.Nodes), so that they and the
// script reach the same server; the reply names it (driver.Reply.Server),
// and the guard keeps one health per shard master. The keys of a call must
// share one slot: otherwise the call is refused with ErrInvalid, and nothing
// is sent. A MOVED reply means the script did not run: the map is read
// again and the call goes once more, to the new owner. ASK, TRYAGAIN and
// CLUSTERDOWN replies are returned as errors (driver.Error): the script did
// not run, which the lock counts as a missing vote.
//
// Releases are announced with sharded pub/sub (SPUBLISH, in the slot of
// the lock key's channel), which keeps each announcement on its shard, and
// Sharded reports true. A subscription holds one dedicated SSUBSCRIBE
// connection per shard master, through that node's client, and sends each
// channel to the master of its slot in the slot map. Its Receive fails, and
// the lock subscribes again on a new subscription, when one of those
// connections ends, when a master refuses a channel whose slot it no longer
// owns (MOVED), and when a master drops a channel by itself, which Redis
// does when the channel's slot moves to another master (an unasked
// SUNSUBSCRIBE); the slot map is then read again before its next use. A
// standalone or Sentinel client subscribes with classic pub/sub
// (SUBSCRIBE), and Sharded reports false.
//
// # What it cannot do
//
// Leave ClientOption.ConnLifetime unset on a client the lock uses: rueidis
// closes the lock's connection each time it reaches its lifetime, a call
// caught on it then fails (a missing vote), and the next one takes a new
// connection, with the guard's questions. Options that route reads to replicas (SendToReplicas,
// ReplicaOnly) do not apply: the lock's batches always hold a script, which
// goes to the master.
package rueidisdriver
