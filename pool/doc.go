// Package pool says what a node of the lock is: one Redis master reached
// through a pool of connections.
//
// Pool is the small interface the lock algorithm consumes. New builds one on
// redigo for an address, "host:port" or a redis:// or rediss:// URL, with
// dial, read and write timeouts, idle limits, ACL authentication, a database
// number and TLS. Bad settings are reported by New, with the values named;
// passwords never appear in errors.
package pool
