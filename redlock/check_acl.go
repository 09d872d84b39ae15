package redlock

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/redlock/internal/scripts"
)

// aclCommands are the commands the lock's user must be allowed: the
// drivers' (EVALSHA, EVAL, SUBSCRIBE, UNSUBSCRIBE), the restart guard's
// (INFO, CONFIG GET, GET of the fence stamp), and those the scripts call.
const aclCommands = "+evalsha +eval +info +config|get +subscribe +unsubscribe +get +set +del +exists +type +pexpire +pttl +hset +hget +hdel +hlen +hexists +zadd +zrange +zrem +zscore +zrank +zcard +zrangebyscore +zremrangebyscore +mget +time +publish"

// aclClusterCommands are what a Redis Cluster node's user needs besides
// aclCommands: sharded announcements, and reading and following slots.
const aclClusterCommands = "+spublish +ssubscribe +sunsubscribe +cluster|slots +asking"

// aclRule returns the ACL rule, after "user <name> on >password", that
// lets a user lock key patterns (such as "jobs:*") in namespace ns, on a
// plain master or a Redis Cluster node (sharded). Without channels, for
// Redis before 6.2, which has no channel permissions, it grants none.
func aclRule(ns string, sharded, channels bool, keys ...string) string {
	var pat []string
	if ns != "" {
		pat = []string{"~" + ns + "*", "&" + ns + "*"}
	} else {
		for _, k := range keys {
			pat = append(pat, "~"+k)
		}
		pat = append(pat, "~"+scripts.ReservedPrefix+"*", "&"+scripts.ReservedPrefix+"*")
	}
	if !channels {
		pat = slices.DeleteFunc(pat, func(p string) bool { return strings.HasPrefix(p, "&") })
	}
	rule := strings.Join(pat, " ") + " -@all " + aclCommands
	if sharded {
		rule += " " + aclClusterCommands
	}
	return rule
}

// cycle is the lock's life on one master's throwaway key, run by Check:
// every script, each way a lock takes it, and the announcement of a release.
type cycle struct {
	p      probe
	m      *master
	r      *MasterReadiness
	tokens []string // every token used, for their tombstones
	wrote  bool     // a script wrote to the master
	// noChannels: the master's Redis has no channel permissions (before
	// 6.2), so the rule to grant has none.
	noChannels bool
}

// fix is what to grant when the lock's commands, keys or channels are
// denied.
func (cy *cycle) fix() string {
	n := cy.m.names
	keys := cy.p.key
	if i := strings.LastIndexByte(keys, ':'); i >= 0 {
		keys = keys[:i+1] + "*"
	}
	return "let the lock's user run its commands on its keys and channels: ACL SETUSER <user> on " + aclRule(n.NS, cy.m.drv.Sharded(), !cy.noChannels, keys)
}

// failed reports a failure of the lock's scripts: an "acl" finding with
// what to grant when the master denied a permission (why), a "scripts"
// finding otherwise.
func (cy *cycle) failed(text string, why ...string) {
	for _, w := range why {
		if denial(w) {
			cy.r.add("acl", CheckFail, text, cy.fix())
			return
		}
	}
	fix := ""
	for _, w := range why {
		if strings.Contains(w, "READONLY") {
			fix = "give the client the master's address, not a replica's"
		}
	}
	cy.r.add("scripts", CheckFail, text, fix)
}

// denial reports an error that says the user lacks a permission: NOPERM,
// or a script's call that the ACL refused.
func denial(err string) bool {
	return strings.Contains(err, "NOPERM") || strings.Contains(err, "can't run this command")
}

// scriptCommands judges the answers to EVAL and EVALSHA of the inspect
// script, and err, the driver's run of it; it reports whether any was
// denied, when running the lock's scripts is pointless.
func (cy *cycle) scriptCommands(answers []any, err error) bool {
	var denied []string
	for i, cmd := range []string{"EVAL", "EVALSHA"} {
		if e, ok := answers[i].(error); ok {
			denied = append(denied, cmd+": "+e.Error())
		}
	}
	if err != nil && len(denied) == 0 {
		denied = append(denied, "the driver's run of the inspect script: "+err.Error())
	}
	if len(denied) > 0 {
		cy.failed("the lock's scripts cannot run: "+strings.Join(denied, "; "), denied...)
		return true
	}
	return false
}

// token returns a new token of the cycle.
func (cy *cycle) token() (string, error) {
	t, err := RandomToken()
	if err == nil {
		cy.tokens = append(cy.tokens, t)
	}
	return t, err
}

// run runs one script call and returns its reply.
func (cy *cycle) run(ctx context.Context, call driver.Call) (any, error) {
	rep, err := cy.p.eval(ctx, cy.m, call)
	return rep.Value, err
}

// cycleStep is one call of the lock cycle and the answer it must get.
type cycleStep struct {
	name string
	do   func(ctx context.Context) error
}

// errAnswer is an answer a step did not expect.
func errAnswer(v any) error { return fmt.Errorf("unexpected answer %+v", v) }

// lock runs the cycle: a plain lock taken, extended, fenced, read and
// released with its announcement heard; a reentrant lock taken twice,
// extended and released hold by hold; an attempt rolled back and not
// landing after; an extension of a free key; a semaphore's permit taken,
// extended, fenced and given back; an RWLock's read hold taken and given
// back.
func (cy *cycle) lock(ctx context.Context) {
	s, n, key := cy.m.scripts, cy.m.names, cy.p.key
	const ttl = 10 * time.Second // deleted at the end; expires if not
	keep := cy.p.c.o.fenceKeep
	sharded := cy.m.drv.Sharded()
	toks := make([]string, 6)
	for i := range toks {
		t, err := cy.token()
		if err != nil {
			cy.r.add("acl", CheckFail, "no token: "+err.Error(), "")
			return
		}
		toks[i] = t
	}
	t1, t2, t3, t4, t5, t6 := toks[0], toks[1], toks[2], toks[3], toks[4], toks[5]
	const owner = "redlock-check"
	ps := cy.listen(ctx, n.Channel(key))
	defer ps.close()
	var fence int64
	var unannounced bool
	grant := func(name string, a scripts.Acquire, ok bool) cycleStep {
		return cycleStep{name, func(ctx context.Context) error {
			g, err := decodeGrant(cy.run(ctx, a.Call(s, n)))
			switch {
			case err != nil:
				return err
			case g.OK != ok || !ok && g.PTTL != scripts.RolledBack:
				return errAnswer(g)
			}
			cy.wrote = true
			fence = max(fence, g.Counter)
			return nil
		}}
	}
	extend := func(name string, e scripts.Extend, want scripts.Extended) cycleStep {
		return cycleStep{name, func(ctx context.Context) error {
			v, err := cy.run(ctx, e.Call(s, n))
			if err != nil {
				return err
			}
			if got, err := scripts.DecodeExtended(v); err != nil || got != want {
				return errAnswer(v)
			}
			return nil
		}}
	}
	release := func(name string, rel scripts.Release, want scripts.Released) cycleStep {
		return cycleStep{name, func(ctx context.Context) error {
			rel.Sharded, rel.TTL = sharded, ttl
			got, err := decodeReleased(cy.run(ctx, rel.Call(s, n)))
			switch {
			case err != nil:
				return err
			case got == scripts.FreedUnannounced && want == scripts.Freed:
				unannounced = true
			case got != want:
				return errAnswer(got)
			}
			return nil
		}}
	}
	// giveBack gives t6's permit or read hold back: the permit scripts
	// release both.
	giveBack := func(ctx context.Context) error {
		rel := scripts.Release{Key: key, Token: t6, Sharded: sharded}
		got, err := decodeReleased(cy.run(ctx, rel.PermitCall(s, n)))
		switch {
		case err != nil:
			return err
		case got != scripts.Freed && got != scripts.FreedUnannounced:
			return errAnswer(got)
		}
		return nil
	}
	steps := []cycleStep{
		grant("acquire", scripts.Acquire{Key: key, Token: t1, TTL: ttl, Keep: keep}, true),
		extend("extend", scripts.Extend{Key: key, Token: t1, TTL: ttl}, scripts.Renewed),
		{"queue of a waiter", func(ctx context.Context) error {
			a := scripts.Acquire{Key: key, Token: t5, TTL: ttl, Keep: keep, Waiter: t5, Ticket: 1, Lease: ttl}
			g, err := decodeGrant(cy.run(ctx, a.Call(s, n)))
			switch {
			case err != nil:
				return err
			case g.OK || g.Head != t5:
				return errAnswer(g)
			}
			return nil
		}},
		{"leave of the queue", func(ctx context.Context) error {
			v, err := cy.run(ctx, scripts.Leave{Key: key, Waiter: t5, Sharded: sharded, Lease: ttl}.Call(s, n))
			if err != nil {
				return err
			}
			if left, err := scripts.DecodeLeft(v); err != nil || !left {
				return errAnswer(v)
			}
			return nil
		}},
		{"raise the fence", func(ctx context.Context) error {
			v, err := cy.run(ctx, scripts.Fence{Key: key, Token: t1, Fence: fence, Keep: ttl + keep}.Call(s, n))
			if err != nil {
				return err
			}
			if ok, err := scripts.DecodeRaised(v); err != nil || !ok {
				return errAnswer(v)
			}
			return nil
		}},
		{"inspect", func(ctx context.Context) error {
			v, err := cy.run(ctx, scripts.Inspect{Key: key}.Call(s, n))
			if err != nil {
				return err
			}
			if st, err := scripts.DecodeState(v); err != nil || st.Holder != t1 {
				return errAnswer(v)
			}
			return nil
		}},
		release("release", scripts.Release{Key: key, Token: t1, Tombstone: true}, scripts.Freed),
		grant("reentrant acquire", scripts.Acquire{Key: key, Token: t2, TTL: ttl, Owner: owner, Keep: keep}, true),
		grant("reentrant second hold", scripts.Acquire{Key: key, Token: t3, TTL: ttl, Owner: owner, Keep: keep}, true),
		extend("reentrant extend", scripts.Extend{Key: key, Token: t2, TTL: ttl, Owner: owner}, scripts.Renewed),
		release("reentrant release of one hold", scripts.Release{Key: key, Token: t3, Owner: owner}, scripts.StillHeld),
		release("reentrant release", scripts.Release{Key: key, Token: t2, Owner: owner}, scripts.Freed),
		release("roll-back", scripts.Release{Key: key, Token: t4, Rollback: true}, scripts.NotHeld),
		grant("acquire after its roll-back", scripts.Acquire{Key: key, Token: t4, TTL: ttl, Keep: keep}, false),
		extend("extend of a free key", scripts.Extend{Key: key, Token: t4, TTL: ttl}, scripts.Vacant),
		{"semaphore's permit", func(ctx context.Context) error {
			g, err := decodeGrant(cy.run(ctx, scripts.Permit{Key: key, Token: t6, TTL: ttl, Permits: 2}.Call(s, n)))
			switch {
			case err != nil:
				return err
			case !g.OK:
				return errAnswer(g)
			}
			fence = max(fence, g.Counter)
			return nil
		}},
		{"permit's extend", func(ctx context.Context) error {
			v, err := cy.run(ctx, scripts.PermitExtend{Key: key, Token: t6, TTL: ttl, Permits: 2}.Call(s, n))
			if got, derr := scripts.DecodeExtended(v); err != nil || derr != nil || got != scripts.Renewed {
				return cmp.Or(err, errAnswer(v))
			}
			return nil
		}},
		{"permit's fence raise", func(ctx context.Context) error {
			v, err := cy.run(ctx, scripts.Fence{Key: key, Token: t6, Fence: fence}.PermitCall(s, n))
			if ok, derr := scripts.DecodeRaised(v); err != nil || derr != nil || !ok {
				return cmp.Or(err, errAnswer(v))
			}
			return nil
		}},
		{"permit's release", giveBack},
		{"read hold", func(ctx context.Context) error {
			g, err := decodeGrant(cy.run(ctx, scripts.Read{Key: key, Token: t6, TTL: ttl}.Call(s, n)))
			switch {
			case err != nil:
				return err
			case !g.OK:
				return errAnswer(g)
			}
			return nil
		}},
		{"read hold's release", giveBack},
	}
	for _, st := range steps {
		if st.name == "reentrant acquire" {
			ps.heard(cy.p) // the plain lock's release was announced
		}
		if err := st.do(ctx); err != nil {
			cy.failed(fmt.Sprintf("the lock's %s failed on key %s: %v", st.name, n.Lock(key), err), err.Error())
			return
		}
	}
	cy.r.add("acl", CheckOK, "every script of the lock runs on "+n.Lock(key)+" and the keys beside it", "")
	ps.report(cy.r, unannounced, cy.fix())
}

// cleanup deletes every key the cycle may have written and reports any
// that remain.
func (cy *cycle) cleanup(ctx context.Context) {
	n, key := cy.m.names, cy.p.key
	k := n.Of(key)
	keys := []string{n.Lock(key), n.Fence(key), k.Queue(), k.Leases(), k.Permits()}
	for _, t := range cy.tokens {
		keys = append(keys, n.Void(key, t))
	}
	qs := [][]string{append([]string{"DEL"}, keys...)}
	for _, k := range keys {
		qs = append(qs, []string{"EXISTS", k})
	}
	rep, _ := cy.p.eval(ctx, cy.m, scripts.Inspect{Key: key}.Call(cy.m.scripts, n), qs...)
	if len(rep.Answers) != len(qs) {
		if cy.wrote {
			cy.r.Residue = keys
			cy.r.add("cleanup", CheckWarn, "could not delete the check's keys (no answer); they expire within 10s", "")
		}
		return
	}
	why, _ := rep.Answers[0].(error)
	for i, k := range keys {
		if v, ok := rep.Answers[i+1].(int64); !ok || v != 0 {
			if e, ok := rep.Answers[i+1].(error); ok && why == nil {
				why = e
			}
			if cy.wrote {
				cy.r.Residue = append(cy.r.Residue, k)
			}
		}
	}
	switch {
	case len(cy.r.Residue) > 0:
		cy.r.add("cleanup", CheckWarn, fmt.Sprintf("could not delete %s (%v); they expire within %v", strings.Join(cy.r.Residue, ", "), why, cy.p.c.o.fenceKeep+10*time.Second),
			"grant +del and +exists to the lock's user")
	case cy.wrote:
		cy.r.add("cleanup", CheckOK, "the check's keys are deleted; the master's fence floor stays, as after any lock", "")
	}
}

// noChannelACL reports a Redis version before 6.2, whose ACL has no channel
// permissions. A version that cannot be parsed is taken to have them.
func noChannelACL(version string) bool {
	parts := strings.SplitN(version, ".", 3)
	if len(parts) < 2 {
		return false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	return err1 == nil && err2 == nil && (major < 6 || major == 6 && minor < 2)
}

// decodeGrant is an acquire's answer, from what its call returned.
func decodeGrant(v any, err error) (scripts.Grant, error) {
	if err != nil {
		return scripts.Grant{}, err
	}
	return scripts.DecodeGrant(v)
}

// decodeReleased is a release's answer, from what its call returned.
func decodeReleased(v any, err error) (scripts.Released, error) {
	if err != nil {
		return scripts.NotHeld, err
	}
	return scripts.DecodeReleased(v)
}
