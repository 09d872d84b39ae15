package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/quorumlock/quorumlock/redlock"
)

// checkQuorum asks every master about key and fails, with one line naming
// the masters that cannot vote, unless a quorum can. It lets a command say
// "unreachable" up front, or tell an unreachable quorum from a lock held
// elsewhere after an attempt failed.
func checkQuorum(ctx context.Context, c *redlock.Client, key string) error {
	st, err := c.Inspect(ctx, key)
	if err != nil {
		return fail(exitError, "asking the masters about key %q: %v", key, err)
	}
	return quorumVotes(st)
}

// votes sorts st's masters into those whose vote counts, those that did not
// answer, and those the guard keeps out (a restart, a failover, a replica,
// an eviction policy, an unreadable INFO).
type votes struct {
	voting      int
	down        []string // "addr: error"
	quarantined []string // "addr: why", the why saying the uptime where it matters
}

func countVotes(st *redlock.Status) votes {
	var v votes
	for _, n := range st.Nodes {
		switch {
		case n.Err != nil:
			v.down = append(v.down, fmt.Sprintf("%s: %v", n.Addr, n.Err))
		case n.Quarantined:
			v.quarantined = append(v.quarantined, fmt.Sprintf("%s: %s", n.Addr, n.Distrust))
		default:
			v.voting++
		}
	}
	return v
}

// quorumVotes fails unless a quorum of st's masters answered and may vote.
func quorumVotes(st *redlock.Status) error {
	v := countVotes(st)
	if v.voting >= st.Quorum {
		return nil
	}
	msg := fmt.Sprintf("only %d of %d masters can vote, %d needed", v.voting, len(st.Nodes), st.Quorum)
	if len(v.down) > 0 {
		msg += "; no answer from " + strings.Join(v.down, "; ")
	}
	if len(v.quarantined) > 0 {
		msg += "; kept out by the restart guard's quarantine or its checks: " + strings.Join(v.quarantined, "; ") +
			" (see --restart-guard)"
	}
	return fail(exitError, "%s", msg)
}
