package info

import (
	"strconv"
	"strings"
	"time"
)

// MinVersion is the oldest Redis the scripts are tested on: every 6.x and
// later. Older masters do not vote.
const (
	MinVersion = "6.0"
	minMajor   = 6
)

// Identity is the master's identity as the acquire script checks it against
// the stamp on its fence data: run_id and replication ID.
func (f Fields) Identity() string {
	return f.RunID + " " + f.ReplID
}

// Promoted reports a master that was a replica and was promoted: INFO
// replication shows role:master, and it keeps the replication ID of the
// master it followed as master_replid2, with the offset
// (second_repl_offset) up to which it has that master's history.
func (f Fields) Promoted() bool {
	return f.Role == "master" && f.ReplID2 != "" && strings.Trim(f.ReplID2, "0") != "" && f.SecondOffset != "-1"
}

// MayEvict reports whether the master may evict keys with a TTL, as every
// lock key has: any policy but noeviction, with a memory limit set.
func (f Fields) MayEvict() bool {
	return f.MaxMemory > 0 && f.Policy != "noeviction"
}

// TooOld reports a redis_version below MinVersion. A version that cannot be
// parsed (a Redis-compatible server) is not judged.
func (f Fields) TooOld() bool {
	major, _, _ := strings.Cut(f.Version, ".")
	ma, err := strconv.Atoi(major)
	return err == nil && ma < minMajor
}

// StampedAt returns when, on the client's clock, the acquire script stamped
// the master's fence data under its current identity, if it did: the master
// was a master under its current replication ID by then. now is when the
// replies were read. Both uptimes are whole seconds, each up to one ahead,
// so the time between them is taken as a second less: the moment returned
// is never earlier than the real one.
func (f Fields) StampedAt(now time.Time) (time.Time, bool) {
	if !f.Stamp.OK || f.Stamp.Identity != f.Identity() || f.Stamp.Uptime > f.Uptime {
		return time.Time{}, false
	}
	return now.Add(-Youngest(f.Uptime - f.Stamp.Uptime)), true
}

// Youngest is the shortest time a master can have been up when INFO says
// uptime_in_seconds is up. Redis counts it as the difference of two clock
// readings truncated to whole seconds, so it runs up to a second ahead: a
// master started at 10.9 s reports 1 at 11.0 s, after 0.1 s. Taking the
// uptime at its word would end a quarantine up to a second early.
//
// The same truncation can also leave the uptime almost a second behind (a
// master started at 10.0 s reports 0 at 10.9 s). Read as a second less, the
// start it gives is therefore never early but up to two seconds late, and
// so is the end of the quarantine: that is why WithRestartGuard says a
// quarantine can last up to two seconds beyond its window.
func Youngest(up time.Duration) time.Duration {
	return max(up-time.Second, 0)
}
