package redlock

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/internal/redistest"
)

// checkNS is the namespace the check's ACL users lock in.
const checkNS = "app:lock:"

// checkUser returns redis-server arguments that create the user "app"
// (password "secret") with rules.
func checkUser(rules ...string) []string {
	return append([]string{"--user", "app", "on", ">secret"}, rules...)
}

// lockUser is the rule aclRule gives for checkNS, with more rules after it.
func lockUser(more ...string) []string {
	return checkUser(append(strings.Fields(aclRule(checkNS, false, true)), more...)...)
}

// checkAt runs Check against one master at addr, with opts.
func checkAt(t *testing.T, addr string, opts ...Option) MasterReadiness {
	t.Helper()
	c := clientAt(t, []string{addr}, append([]Option{WithNamespace(checkNS)}, opts...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := c.Check(ctx, CheckParams{TTL: 10 * time.Second})
	require.NoError(t, err)
	require.Len(t, r.Masters, 1)
	return r.Masters[0]
}

// finding returns m's finding on topic, failing t if there is none.
func finding(t *testing.T, m MasterReadiness, topic string) Finding {
	t.Helper()
	for _, f := range m.Findings {
		if f.Topic == topic {
			return f
		}
	}
	t.Fatalf("no %q finding in %s", topic, describe(m))
	return Finding{}
}

func describe(m MasterReadiness) string {
	var b strings.Builder
	for _, f := range m.Findings {
		fmt.Fprintf(&b, "\n  %s %s: %s (fix: %s)", f.Level, f.Topic, f.Text, f.Fix)
	}
	return b.String()
}

// want is one finding a server set up for it must show.
type want struct {
	topic string
	level CheckLevel
	says  string // in the finding's text
	fix   string // in its fix
}

// checkCase is one server set up with a misconfiguration, and the findings
// it must show.
type checkCase struct {
	name  string
	p     redistest.Persistence
	args  []string
	user  bool // log in as "app"
	opts  []Option
	want  []want
	ready bool
}

// runCases starts each case's server, checks it, and asserts that each
// wanted finding shows at its level with its text and fix, and whether the
// master passes.
func runCases(t *testing.T, tests []checkCase) {
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := redistest.Start(t, 1, tt.p, splitArgs(tt.args)...)
			addr := srv[0].Addr()
			if tt.user {
				addr = "redis://app:secret@" + addr
			}
			m := checkAt(t, addr, tt.opts...)
			for _, w := range tt.want {
				f := finding(t, m, w.topic)
				assert.Equal(t, w.level, f.Level, "%s:%s", w.topic, describe(m))
				assert.Contains(t, f.Text, w.says, describe(m))
				assert.Contains(t, f.Fix, w.fix, describe(m))
			}
			assert.Equal(t, tt.ready, m.Ready(), describe(m))
			if tt.ready {
				assert.Empty(t, m.Residue)
			}
		})
	}
}

// aclCommandsArgs is aclCommands as one argument: splitArgs splits it.
func aclCommandsArgs() string { return aclCommands }

// splitArgs splits arguments that hold several words.
func splitArgs(args []string) []string {
	var out []string
	for _, a := range args {
		out = append(out, strings.Fields(a)...)
	}
	return out
}

// Three healthy masters and a bad one: the check says ready when a quorum
// passes, and not when it does not.
func TestIntegration_Check_QuorumDecides(t *testing.T) {
	good := redistest.Start(t, 2, redistest.FsyncAlways)
	evicts := redistest.Start(t, 1, redistest.FsyncAlways, "--maxmemory", "10mb", "--maxmemory-policy", "allkeys-lru")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tt := range []struct {
		addrs []string
		ready bool
		says  string
	}{
		{[]string{good[0].Addr(), good[1].Addr(), evicts[0].Addr()}, true, "READY: 2 of 3 masters pass, the quorum is 2"},
		{[]string{good[0].Addr(), evicts[0].Addr(), deadAddr(t)}, false, "NOT READY: 1 of 3 masters pass, the quorum is 2; fix the failures above"},
	} {
		c := clientAt(t, tt.addrs)
		r, err := c.Check(ctx, CheckParams{TTL: time.Second})
		require.NoError(t, err)
		assert.Equal(t, tt.ready, r.Ready())
		assert.Equal(t, tt.says, r.Summary())
	}
}

// Bad input is ErrInvalid, a closed client ErrClosed.
func TestCheck_Input(t *testing.T) {
	c := clientAt(t, []string{deadAddr(t)})
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		ctx  context.Context
		p    CheckParams
	}{
		{"nil context", nil, CheckParams{TTL: time.Second}},
		{"no TTL", ctx, CheckParams{}},
		{"negative TTL", ctx, CheckParams{TTL: -time.Second}},
		{"TTL above the maximum", ctx, CheckParams{TTL: MaxTTL + time.Millisecond}},
		{"TTL within the drift reserve", ctx, CheckParams{TTL: 2 * time.Millisecond}},
		{"reserved prefix", ctx, CheckParams{TTL: time.Second, KeyPrefix: "quorumlock:x"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.Check(tt.ctx, tt.p)
			assert.ErrorIs(t, err, ErrInvalid)
		})
	}
	var nilClient *Client
	_, err := nilClient.Check(ctx, CheckParams{TTL: time.Second})
	assert.ErrorIs(t, err, ErrInvalid)
	require.NoError(t, c.Close())
	_, err = c.Check(ctx, CheckParams{TTL: time.Second})
	assert.ErrorIs(t, err, ErrClosed)
}

// Ready counts the masters without a failure against the quorum; the
// summary names when young masters vote.
func TestCheck_ReadinessSummary(t *testing.T) {
	ok := MasterReadiness{Findings: []Finding{{Level: CheckOK}, {Level: CheckWarn}}}
	young := MasterReadiness{Findings: []Finding{{Level: CheckWarn}}, VotesIn: 8 * time.Second}
	bad := MasterReadiness{Findings: []Finding{{Level: CheckOK}, {Level: CheckFail}}}
	for _, tt := range []struct {
		name    string
		quorum  int
		masters []MasterReadiness
		ready   bool
		summary string
	}{
		{"all pass", 2, []MasterReadiness{ok, ok, ok}, true, "READY: 3 of 3 masters pass, the quorum is 2"},
		{"a quorum passes", 2, []MasterReadiness{ok, bad, ok}, true, "READY: 2 of 3 masters pass, the quorum is 2"},
		{"no quorum", 2, []MasterReadiness{bad, bad, ok}, false, "NOT READY: 1 of 3 masters pass, the quorum is 2; fix the failures above"},
		{"young, still a quorum voting now", 2, []MasterReadiness{ok, ok, young}, true, "READY: 3 of 3 masters pass, the quorum is 2"},
		{"young, no quorum voting now", 2, []MasterReadiness{ok, young, young}, true,
			"READY: 3 of 3 masters pass, the quorum is 2; 2 vote only once up for the guard window: locks are granted in 8s at the latest"},
		{"quorum of all", 3, []MasterReadiness{ok, ok, bad}, false, "NOT READY: 2 of 3 masters pass, the quorum is 3; fix the failures above"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := &Readiness{Quorum: tt.quorum, Masters: tt.masters}
			assert.Equal(t, tt.ready, r.Ready())
			assert.Equal(t, tt.summary, r.Summary())
		})
	}
	assert.Equal(t, []string{"ok", "warn", "fail", "level(7)"},
		[]string{CheckOK.String(), CheckWarn.String(), CheckFail.String(), CheckLevel(7).String()})
}

// docs/check.md gives the rule the check's fix gives, and explains every
// topic a finding can have.
func TestCheck_DocsExplainEveryTopic(t *testing.T) {
	b, err := os.ReadFile("../docs/check.md")
	require.NoError(t, err)
	doc := string(b)
	assert.Contains(t, doc, "ACL SETUSER app on >secret "+aclRule(checkNS, false, true))
	assert.Contains(t, doc, aclClusterCommands)
	for _, topic := range []string{"reach", "readable", "version", "role", "persistence", "eviction", "acl and scripts", "pubsub", "cleanup", "uptime", "clock"} {
		assert.Contains(t, doc, "\n### "+topic+"\n", "docs/check.md has no section on %s", topic)
	}
}
