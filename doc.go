// Package quorumlock holds the Redlock algorithm, apart from any Redis code:
// the quorum size, the parallel fan-out to N nodes with a timeout per node and
// an early return once the outcome is decided, and the validity arithmetic
// that turns a TTL, the time an acquisition took and a clock-drift reserve
// into the time a lock may be used.
//
// Most users want the redlock package, which builds the lock on these parts.
package quorumlock
