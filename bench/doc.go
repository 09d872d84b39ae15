// Package bench compares quorumlock with go-redsync/redsync and with a
// hand-written floor, on the same five local redis-server masters, in one run.
//
// The floor is the least work a correct Redlock acquire+release can do: a
// parallel SET NX PX to every master that returns at quorum, and a parallel
// compare-and-delete that returns at quorum, each bounded per master. The
// library is measured against it, and against redsync, which waits for every
// master.
//
// The package holds the contenders (Locker implementations), the measuring
// harnesses (sequential and contended), a delaying TCP proxy that makes one
// master answer late, and a vote observer that counts split votes. The
// benchmarks and the comparison report are its tests; see README.md.
//
// It is its own module so that redsync and its drivers never enter the
// library's dependency graph.
package bench
