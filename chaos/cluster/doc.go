// Package cluster runs N independent Redis masters for the chaos suite and
// injects faults into them, behind one Cluster interface with two backends:
//
//   - docker: one container per master on a private network, from an image
//     built locally (FROM scratch) out of the host's redis-server binary and
//     the shared libraries it links, since no registry is reachable. Process
//     faults are signals sent with the Docker API (KillContainer), so the
//     signal is the one meant: SIGKILL, SIGTERM, SIGSTOP, SIGCONT.
//   - process: redis-server child processes on loopback ports.
//
// On both, every client reaches every master through its own in-process
// toxiproxy proxy, so latency, dropped replies and cuts can be aimed at one
// client's view of one master: that is how each client can be shown a
// different majority. A master may have a replica, which a failover puts
// behind the master's proxies in its place.
//
// On the process backend, each node may instead be a Redis Cluster of
// shard masters with replicas (Spec.Shards, Sharded), for the failover of
// one shard to a replica that lags.
//
// Clusters are test fixtures: they take a testing.TB and register their
// removal with its Cleanup, so nothing outlives a failed test.
package cluster
