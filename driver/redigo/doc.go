// Package redigo is the lock's default driver: one Redis master, or one
// Redis Cluster, implementing driver.Master with its own RESP2 client.
//
// New builds one for an address, "host:port" or a redis:// or rediss:// URL, with
// dial, read and write timeouts, ACL authentication, a database number and
// TLS, including mutual TLS with certificates read from PEM files named in
// a rediss:// URL (tls_ca_file, tls_cert_file, tls_key_file,
// tls_server_name; see New and TLSParams). NewCluster builds one for a
// Redis Cluster, and Open either, as the address says. Bad settings are
// reported by the constructor, with the values and files named; passwords
// never appear in errors.
//
// Eval, the lock's scripts, and Do share one connection to the master (or
// a few: WithPipelineConns): calls made at once go out in one write, their
// replies are matched in order, and each call keeps its own deadline. A
// connection on which a call timed out while the master answered nothing
// is silent: it keeps taking calls, which run in order if the master comes
// back, and is replaced by one dial at a time, the dials spaced by a
// backoff that grows from 0.5 s to 4 s while the master stays silent, so
// that a stopped master is not dialled at every deadline. A dial the master
// does not answer in time (a host that drops packets, a stopped master
// with its listen queue full, or one that does not answer AUTH) is spaced
// the same way, the calls meanwhile failing at once. A dial goes on to its
// call's deadline when the call is cancelled sooner, so that what it finds
// serves, and spaces, the calls after it. A master that
// refuses connections (a password missing or wrong, maxclients reached: a
// dial that fails, or a connection closed before it served a call) is
// dialled again 50 ms later, then twice as long each time up to 1 s, until
// a connection serves; the calls meanwhile fail at once with its refusal
// (NOAUTH, WRONGPASS). A dial refused because nothing listens is spaced by
// neither: it costs the master nothing, and reaches it as soon as it
// listens again. Subscribe opens a
// connection of its own.
//
// Start, which the lock calls, is Eval for a caller that does not wait: on
// a connection already open, the call is written from the caller's
// goroutine and its reply handed over by the connection's reader, or at the
// call's deadline, so that a fan-out to N masters needs no goroutine per
// master.
//
// The package links no Redis client library: a program that locks through
// another driver does not carry a second client.
package redigo
