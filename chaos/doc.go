// Package chaos is the quorumlock chaos suite: it runs the redlock client
// against real Redis masters while killing, stopping, pausing, slowing,
// partitioning and restarting them, and checks the lock's promises with five
// checkers (mutual exclusion, lost writes, fencing, residue and liveness, and
// no waiter stuck in line).
//
// The suite lives in its own module so that its dependencies (dockertest,
// toxiproxy) never reach the library's users. See README.md for how to run
// it and what each scenario shows. The packages:
//
//   - cluster: N Redis masters behind one Cluster interface, as docker
//     containers or as local processes, with toxiproxy links per client;
//     or, on the process backend, N Redis Clusters whose shards fail over
//     (Sharded).
//   - history: what happened during a run, on one monotonic clock.
//   - workload: the contending clients, in the test process or as processes
//     of their own, the shared set and the fenced store.
//   - check: the checkers C1 to C5.
//   - report: the report table and the timeline pictures.
//   - scenario: the scenarios, their expected outcomes, and the test that
//     runs them on every available backend.
package chaos
