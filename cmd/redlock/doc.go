// Command redlock takes, holds and inspects locks over N independent Redis
// masters with the quorumlock library, from the shell.
//
//	redlock demo                        watch a quorum lock survive failing masters
//	redlock run --key K -- CMD ARGS...  run a command while holding a lock
//	redlock status KEY...               what every master says about a key
//	redlock check                       whether the masters are ready for locking
//	redlock bench                       acquire+release throughput and latency
//
// Masters come from --nodes (comma-separated host:port or redis:// and
// rediss:// URLs) or from REDLOCK_NODES. demo and bench start five in-process
// masters when neither is given, so they run on a machine with nothing but Go.
// --tls, --tls-ca-file, --tls-cert-file, --tls-key-file and --tls-server-name
// reach every master over TLS, with a client certificate for masters that
// ask for one, as a rediss:// URL's tls_* parameters do for one master.
//
// The library's options keep their names and defaults as flags: --ttl,
// --drift-factor, --drift-margin, --node-timeout, --quorum, --restart-guard
// and --fence-retention. Every subcommand explains itself with -h.
package main
