// Package quorumlock holds the arithmetic of the Redlock algorithm, as its
// specification states it and apart from any Redis code: the quorum of N
// masters a lock needs (Quorum), and the time a lock may be used once
// acquired, which is its TTL less the time the acquisition took and a
// reserve for clock drift between the masters (Validity, Drift).
//
// The lock itself lives in the redlock package: the parallel requests to
// the masters, the roll-back of a failed attempt, split votes, fencing
// tokens, the restart guard and the lease. Most users want that package.
package quorumlock
