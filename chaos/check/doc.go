// Package check holds the suite's checkers. Each reads a run's history
// (and, for C4, the masters themselves) and says whether the lock kept its
// promise:
//
//   - C1 Exclusion: no two holds of a key overlap on the run's clock.
//   - C2 Lost: no acknowledged element of the shared set went missing.
//   - C3 Fenced: the fenced store never accepted a write from a holder
//     after a newer holder had written.
//   - C4 Leftovers and Liveness: once faults heal and a TTL passes, no
//     master keeps a failed attempt's token, and the lock can be taken again.
//   - C5 Waiting: no Lock call stuck longer than its bound while a quorum is
//     up, and the key never left free for long while someone waits for it.
//   - C6 Capacity: no more holds of a semaphore's key at once than its
//     permits.
//   - C7 Writers: an RWLock's write hold overlaps no other hold.
//   - C8 Pace: no Lock call retries faster than its wait allows (a waiter
//     that spins).
//
// A checker that has never fired proves nothing, so each has tests that feed
// it a bad history and see it fire.
package check
