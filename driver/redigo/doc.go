// Package pool is the lock's default driver: one Redis master reached through
// a redigo pool of connections, implementing driver.Master.
//
// New builds one for an address, "host:port" or a redis:// or rediss:// URL, with
// dial, read and write timeouts, idle limits, ACL authentication, a database
// number and TLS, including mutual TLS with certificates read from PEM files
// named in a rediss:// URL (tls_ca_file, tls_cert_file, tls_key_file,
// tls_server_name; see New and TLSParams). Bad settings are reported by New,
// with the values and files named; passwords never appear in errors.
//
// Eval, the lock's scripts, runs in one of two modes (WithPipeline, or the
// URL's pipeline parameter). Pipelined, the default, the calls share one
// connection (or a few: WithPipelineConns): calls made at once go out in
// one write, their replies are matched in order, and each call keeps its
// own deadline; a connection on which a call timed out while the master
// answered nothing takes no more calls and is replaced. Pooled, each call
// takes a connection of its own from a redigo pool.
//
// Start (driver.Starter) is Eval for a caller that does not wait: in the
// pipelined mode, on a connection already open, the call is written from the
// caller's goroutine and its reply handed over by the connection's reader,
// or at the call's deadline, so that a fan-out to N masters needs no
// goroutine per master. The lock fans its acquires and releases out so.
package redigo
