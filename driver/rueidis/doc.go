// Package rueidisdriver lets the lock use a rueidis client the application
// already has: New wraps a rueidis.Client, standalone, Sentinel or Redis
// Cluster, as one driver.Master, one master of the lock's quorum.
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
// Close leaves the client open, as the application may go on using it;
// WithCloseClient has Close close it too.
//
// # How the restart guard still sees a restart
//
// The guard reads a master's health (run_id, uptime, role, persistence,
// eviction policy) on any connection that may reach a server process it has
// not read yet, in the same round trip as the script, so that a master that
// restarted empty does not vote before the guard knows. The redigo driver
// counts its dials for that. rueidis dials and replaces connections inside
// the client, and a client built elsewhere offers no hook to see it:
// ClientOption.DialCtxFn is read only when the client is built.
//
// So, by default, every call counts as a new dial: the guard's questions go
// with every script, as commands ahead of it in one DoMulti. rueidis writes
// a DoMulti as one batch on one connection and reads its replies in order,
// so the answers and the script's reply come from the same server process,
// and the first call that reaches a restarted master carries the questions
// that quarantine it. This costs the master the work of the questions on
// every call. The package's benchmarks (bench_test.go) measure it, on
// three local masters sharing two CPUs with the client: a call with the
// questions cost the master about five times the CPU time of one without
// (47 µs against 9), and a TryLock with its Release from 64 goroutines
// 1.4 to 1.7 times the masters' CPU time it costs through the redigo driver
// (684 to 750 µs against 441 to 494, over five runs), against 0.9 to 1.1
// times (405 to 490 µs) with dial counts, below.
//
// The guard keeps the answers that come to it with the highest count of
// dials (driver.Reply.Dials), and drops older ones. Without dial counts
// the driver numbers each reply as it returns, so the numbers follow the
// order in which the answers came back, which is the order of the server
// processes that gave them, unless a goroutine stalls between a reply and
// its number for the whole of a master's restart (and another between its
// number and the guard). Dial counts leave no such window.
//
// An application that builds the client can count its dials instead: call
// CountDials on the rueidis.ClientOption before rueidis.NewClient, and give
// the counts to New with WithDials. Each call then takes a dedicated
// connection of the client's (Client.Dedicate), reads the dial count once
// it has it, and carries the questions only when a connection was opened
// since the guard's last answers, as the redigo driver does; a connection
// found dead is replaced, and the call tried again with the questions. The
// price is the one of a pool: a connection for each call in flight, with
// rueidis' buffers (ReadBufferEachConn and WriteBufferEachConn, 0.5 MiB
// each by default), and no automatic pipelining of the lock's calls.
//
// # Deadlines
//
// A call returns at its ctx's deadline, or after WithTimeout when its ctx
// has none. rueidis matches each reply to the call that sent the command, so
// a reply that arrives after its call gave up is dropped, never given to a
// later call. A dedicated connection (for WithDials, and for subscriptions)
// that rueidis is still dialling when the ctx ends is given back, or
// closed, once it arrives.
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
// Do not set ClientOption.ConnLifetime on a client the lock uses: when a
// connection reaches its lifetime in the middle of a batch, rueidis sends
// the batch's unanswered commands again on another connection, so a script
// could run on another connection than its questions were answered on, or
// run twice. Options that route reads to replicas (SendToReplicas,
// ReplicaOnly) do not apply: the lock's batches always hold a script, which
// goes to the master.
package rueidisdriver
