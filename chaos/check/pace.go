package check

import (
	"fmt"
	"time"

	"github.com/quorumlock/quorumlock/chaos/history"
)

// The pace a Lock call may retry at: paceBase attempts, and paceRate more
// per second it waited. A waiter retries when a release names it, when the
// holder's TTL runs out, when it renews its place, after a split vote (in a
// window that widens with each split in a row) and after its backoff
// (ExponentialBackoff from 4 ms, full jitter); at worst, while a master's
// subscription is unconfirmed, every node timeout. That is tens of attempts
// a second at the most. A waiter woken by its own roll-backs, or by
// another waiter's in turn, retries as fast as the masters answer: hundreds
// to thousands a second.
const (
	paceBase = 20
	paceRate = 100 // attempts per second
)

// Pace returns a problem for each call that made more attempts than its
// wait allows (see paceRate): a waiter that spins.
func Pace(attempts []history.Attempt) []string {
	var out []string
	for _, a := range attempts {
		if limit := PaceLimit(a.Latency()); a.Tries > limit {
			out = append(out, fmt.Sprintf("C8: client %d worker %d made %d attempts in %v on %q (at most %d): it retried as fast as the masters answer",
				a.Client, a.Worker, a.Tries, a.Latency().Round(time.Millisecond), a.Key, limit))
		}
	}
	return out
}

// PaceLimit is the most attempts a call that waited d may make.
func PaceLimit(d time.Duration) int {
	return paceBase + int(d.Seconds()*paceRate)
}
