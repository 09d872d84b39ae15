// Package pool says what a node of the lock is: one Redis master reached
// through a pool of connections.
//
// Pool is the small interface the lock algorithm consumes. New builds one on
// redigo for an address, "host:port" or a redis:// or rediss:// URL, with
// dial, read and write timeouts, idle limits, ACL authentication, a database
// number and TLS, including mutual TLS with certificates read from PEM files
// named in a rediss:// URL (tls_ca_file, tls_cert_file, tls_key_file,
// tls_server_name; see New and TLSParams). Bad settings are reported by New,
// with the values and files named; passwords never appear in errors.
package pool
