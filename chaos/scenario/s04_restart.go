package scenario

import (
	"context"
	"fmt"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/quorumlock/quorumlock/chaos/cluster"
)

// restartVariant is one way of bringing a crashed master back.
type restartVariant struct {
	id, name, shows, expected string
	guard                     bool                // the restart guard is on
	delayed                   bool                // the master stays down longer than the TTL
	persistence               cluster.Persistence // of every master
}

// restarts are scenario 4 and its controls. A holder of group A is frozen
// while it holds the lock on n0, n1 and n2; n0 is killed and comes back.
// Group B, which reaches n0, n3 and n4, then asks for the lock.
//
// Without the guard, without persistence and without delay, n0 comes back
// empty and grants it: two holders at once. This is the negative control
// that shows C1 can fail. Each of the three remedies must keep C1 clean.
func restarts() []*Scenario {
	vs := []restartVariant{
		{
			id: "04a", name: "restart-guard-off",
			shows:    "n0 killed and restarted at once, empty, restart guard off: the negative control",
			expected: "C1 MUST find the double holder",
		},
		{
			id: "04b", name: "restart-guard-on", guard: true,
			shows:    "n0 killed and restarted at once, empty, restart guard on (the default)",
			expected: "C1 clean: n0 does not vote until up longer than the TTL; then it rejoins",
		},
		{
			id: "04c", name: "restart-delayed", delayed: true,
			shows:    "n0 killed and kept down longer than the TTL, then restarted empty, guard off",
			expected: "C1 clean",
		},
		{
			id: "04d", name: "restart-fsync-always", persistence: cluster.FsyncAlways,
			shows:    "n0 killed and restarted at once with appendfsync always, guard off",
			expected: "C1 clean: n0 reloads the holder's key",
		},
	}
	out := make([]*Scenario, len(vs))
	for i, v := range vs {
		out[i] = restart(v)
	}
	return out
}

func restart(v restartVariant) *Scenario {
	s := &Scenario{
		ID: v.id, Name: v.name, Shows: v.shows, Expected: v.expected,
		Nodes: 5, Clients: 4, TTL: 3 * time.Second, Run: 4 * time.Second,
		Persistence: v.persistence, Guard: v.guard, WarmUp: v.guard,
		Setup: sharedNode,
	}
	s.Inject = func(ctx context.Context, e *Env) error {
		if err := e.Sleep(ctx, 500*time.Millisecond); err != nil {
			return err
		}
		c, err := catchA(ctx, e, 2*time.Second)
		if err != nil {
			return fmt.Errorf("no holder of group A to freeze: %w", err)
		}
		defer c.Resume()
		until := c.Hold.Until
		e.Notef("client %d frozen while it holds fence %d on n0, n1 and n2", c.Hold.Client, c.Hold.Fence)
		if err := e.Cluster.Kill(ctx, 0); err != nil {
			return err
		}
		if v.delayed {
			// The holder goes on before its validity ends; n0 stays down
			// until the TTL and the drift reserve have passed.
			if err := e.Sleep(ctx, until-300*time.Millisecond-e.History.Now()); err != nil {
				return err
			}
			c.Resume()
			down := s.TTL + s.TTL/100 + 2*time.Millisecond + 200*time.Millisecond
			if err := e.Sleep(ctx, c.Hold.Acquired+down-e.History.Now()); err != nil {
				return err
			}
		}
		if err := e.Cluster.Start(ctx, 0, v.persistence); err != nil {
			return err
		}
		restarted := e.Mark("restarted")
		if v.persistence == cluster.FsyncAlways {
			holder, err := tokenOn(ctx, e.Cluster.Direct(0), "chaos-"+s.ID)
			e.Notef("n0 after restart holds %q", holder)
			if err != nil || holder != c.Hold.Token {
				e.Failf("n0 came back without the frozen holder's token (got %q, %v)", holder, err)
			}
		}
		// Does group B get the lock while the holder of group A is frozen?
		wctx, cancel := e.Deadline(ctx, until-300*time.Millisecond)
		err = awaitHold(wctx, e, groupB(), restarted)
		cancel()
		if err == nil {
			e.Notef("group B got the lock while client %d was frozen holding it", c.Hold.Client)
			// Let the two holds overlap visibly before the frozen one goes on.
			e.Sleep(ctx, min(400*time.Millisecond, until-300*time.Millisecond-e.History.Now()))
		} else {
			e.Notef("group B did not get the lock while client %d was frozen holding it", c.Hold.Client)
		}
		c.Resume()
		if v.guard {
			// Once its uptime passes the guard window, n0 votes again.
			rctx, cancel := context.WithTimeout(ctx, 2*s.TTL+5*time.Second)
			defer cancel()
			if err := awaitHold(rctx, e, groupB(), restarted); err != nil {
				e.Failf("n0 never rejoined the quorum after its restart: group B got no lock (%v)", err)
			} else {
				e.Mark("rejoined")
			}
		}
		return nil
	}
	s.Expect = func(r *Result) []string {
		if !v.guard && !v.delayed && v.persistence == cluster.Ephemeral {
			return want(len(r.C1) > 0, "negative control: C1 found no double holder, so it cannot be shown to fail")
		}
		return safe(r)
	}
	return s
}

// tokenOn reads a plain lock's token directly from a master.
func tokenOn(ctx context.Context, addr, key string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conn, err := redis.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	return redis.String(redis.DoWithTimeout(conn, 2*time.Second, "GET", key))
}
