package redistest

import (
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"
)

// StartReplica starts a replica of master, from the same binary, with no
// persistence and the extra arguments, and waits until it has synced. Its
// removal is registered with tb.Cleanup.
func StartReplica(tb testing.TB, master *Server, extra ...string) *Server {
	tb.Helper()
	// A master waits 5 s by default before a diskless full sync, for more
	// replicas to join it.
	if _, err := master.Do("CONFIG", "SET", "repl-diskless-sync-delay", "0"); err != nil {
		tb.Fatal(err)
	}
	args := append([]string{"--replicaof", "127.0.0.1", strconv.Itoa(master.Port)}, extra...)
	r := StartWith(tb, master.bin, 1, Ephemeral, args...)[0]
	if err := r.WaitSynced(10 * time.Second); err != nil {
		tb.Fatal(err)
	}
	if err := waitStreaming(master, r, "redistest:replica-sync", false, 10*time.Second); err != nil {
		tb.Fatal(err)
	}
	return r
}

// waitStreaming waits until writes on master reach replica. A replica that
// reports its first sync done may still not get them: after a diskless sync
// the master holds the stream back until the replica's first acknowledgement,
// up to a second later, and WAIT can count the replica meanwhile. A marker
// written on master and seen on replica proves the stream flows; it is
// deleted again, and the deletion seen there too. A cluster's marker must
// be in a slot of master's, and its replica reads it after READONLY.
func waitStreaming(master, replica *Server, marker string, cluster bool, limit time.Duration) error {
	read := [][]string{{"GET", marker}}
	if cluster {
		read = [][]string{{"READONLY"}, {"GET", marker}}
	}
	deadline := time.Now().Add(limit)
	for _, want := range []string{"1", ""} {
		var err error
		if want != "" {
			_, err = master.Do("SET", marker, want)
		} else {
			_, err = master.Do("DEL", marker)
		}
		if err != nil {
			return err
		}
		for {
			got, err := doSeq(replica.Addr(), read...)
			if (err == nil || errors.Is(err, ErrNil)) && got == want {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("redistest: writes on %s do not reach its replica %s after %v", master.Addr(), replica.Addr(), limit)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return nil
}

// WaitSynced waits, up to limit, until the server is a replica whose link to
// its master is up and whose first sync is done.
func (s *Server) WaitSynced(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	var last map[string]string
	for time.Now().Before(deadline) {
		f, err := s.Info("replication")
		if err == nil && f["role"] == "slave" && f["master_link_status"] == "up" && f["master_sync_in_progress"] == "0" {
			return nil
		}
		last = f
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("redistest: replica %s not in sync after %v: %v", s.Addr(), limit, last)
}

// WaitReplicated waits, up to limit, until replica has every write master
// has made: their replication offsets agree.
func WaitReplicated(master, replica *Server, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		m, err1 := master.Info("replication")
		r, err2 := replica.Info("replication")
		if err := errors.Join(err1, err2); err != nil {
			return err
		}
		if m["master_repl_offset"] != "" && m["master_repl_offset"] == r["slave_repl_offset"] {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("redistest: %s did not catch up with %s within %v", replica.Addr(), master.Addr(), limit)
}

// Promote detaches a replica from its master (REPLICAOF NO ONE): it becomes
// a master with the data it had, and records its former master's history as
// master_replid2, as a failover does.
func (s *Server) Promote() error {
	_, err := s.Do("REPLICAOF", "NO", "ONE")
	return err
}
