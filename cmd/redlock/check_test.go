package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/internal/redistest"
)

// findingLine matches one finding line: two spaces, the level, the topic,
// the text.
var findingLine = regexp.MustCompile(`^  (ok|warn|fail) +([a-z]+) +\S`)

// Three healthy masters, durable so that even their young uptime does not
// keep them out: every finding is ok, and the status is 0.
func TestCheck_HealthyMasters_ExitZero(t *testing.T) {
	srv := redistest.Start(t, 3, redistest.FsyncAlways)
	r := bin.run(t, nil, "check", "--nodes", strings.Join(redistest.Addrs(srv), ","))
	require.Equal(t, exitOK, r.code, "%v", r)
	assert.Empty(t, r.stderr)
	assert.Contains(t, r.stdout, "3 masters, quorum 2; judged for a TTL of 10s: guard window 10.102s, drift reserve 102ms\n")
	lines := strings.Split(r.stdout, "\n")
	findings := 0
	for _, l := range lines {
		if m := findingLine.FindStringSubmatch(l); m != nil {
			findings++
			assert.Equal(t, "ok", m[1], l)
		}
	}
	assert.Equal(t, 3*11, findings, "eleven findings a master:\n%s", r.stdout)
	for _, s := range srv {
		assert.Contains(t, r.stdout, "node ")
		assert.Contains(t, r.stdout, s.Addr())
	}
	assert.Contains(t, r.stdout, "\nREADY: 3 of 3 masters pass, the quorum is 2\n")
}

// A mixed set where no quorum can vote: a replica, a master that may evict,
// an unreachable address and a healthy master. Each problem is one line
// with its fix; the status is 1, with the summary on stderr.
func TestCheck_BadMasters_ExitOneWithTheFixes(t *testing.T) {
	good := redistest.Start(t, 1, redistest.FsyncAlways)
	evicts := redistest.Start(t, 1, redistest.FsyncAlways, "--maxmemory", "10mb", "--maxmemory-policy", "allkeys-lru")
	replica := redistest.StartReplica(t, good[0])
	nodes := strings.Join([]string{good[0].Addr(), evicts[0].Addr(), replica.Addr(), "127.0.0.1:1"}, ",")
	r := bin.run(t, nil, "check", "--nodes", nodes)
	require.Equal(t, exitError, r.code, "%v", r)
	for _, want := range []string{
		"  fail  eviction    maxmemory-policy allkeys-lru with maxmemory 10485760 may evict lock keys, so the restart guard will not let it vote; fix: CONFIG SET maxmemory-policy noeviction",
		"  fail  role        a replica (role:slave) of 127.0.0.1:",
		"; fix: give the client its master's address",
		"  fail  reach       unreachable: dial tcp 127.0.0.1:1: connect: connection refused; fix: check the address",
		"\nNOT READY: 1 of 4 masters pass, the quorum is 3; fix the failures above\n",
	} {
		assert.Contains(t, r.stdout, want)
	}
	if lines := r.stderrLines(); assert.Len(t, lines, 1, "%v", r) {
		assert.Equal(t, "redlock check: NOT READY: 1 of 4 masters pass, the quorum is 3; fix the failures above", lines[0])
	}
	// The same set, less the unreachable address and with eviction trusted:
	// a quorum of 2 of 3 passes.
	nodes = strings.Join([]string{good[0].Addr(), evicts[0].Addr(), replica.Addr()}, ",")
	r = bin.run(t, nil, "check", "--nodes", nodes, "--trust-eviction")
	require.Equal(t, exitOK, r.code, "%v", r)
	assert.Contains(t, r.stdout, "  warn  eviction    maxmemory-policy allkeys-lru")
	assert.Contains(t, r.stdout, "\nREADY: 2 of 3 masters pass, the quorum is 2\n")
}

// The user in the address is the one checked, in --namespace: the lock's
// rule passes, one without EVALSHA fails with the rule to grant.
func TestCheck_ACLUserInNamespace(t *testing.T) {
	rule := "~app:lock:* &app:lock:* -@all +evalsha +eval +info +config|get +subscribe +unsubscribe +get +set +del +exists +type +pexpire +pttl +hset +hget +hdel +hlen +hexists +zadd +zrange +zrem +zscore +zrank +zcard +zrangebyscore +zremrangebyscore +mget +time +publish"
	user := func(more ...string) string {
		args := append([]string{"--user", "app", "on", ">secret"}, strings.Fields(rule)...)
		srv := redistest.Start(t, 1, redistest.FsyncAlways, append(args, more...)...)
		return "redis://app:secret@" + srv[0].Addr()
	}
	ok := user()
	r := bin.run(t, nil, "check", "--nodes", ok, "--namespace", "app:lock:")
	require.Equal(t, exitOK, r.code, "%v", r)
	assert.Contains(t, r.stdout, "  ok    acl         every script of the lock runs on app:lock:redlock-check:")

	r = bin.run(t, nil, "check", "--nodes", user("-evalsha"), "--namespace", "app:lock:")
	require.Equal(t, exitError, r.code, "%v", r)
	assert.Contains(t, r.stdout, "  fail  acl         the lock's scripts cannot run: EVALSHA: NOPERM")
	assert.Contains(t, r.stdout, "fix: let the lock's user run its commands on its keys and channels: ACL SETUSER <user> on "+rule)

	// Without the namespace, the check's key is outside the user's keys.
	r = bin.run(t, nil, "check", "--nodes", ok)
	require.Equal(t, exitError, r.code, "%v", r)
	assert.Contains(t, r.stdout, "  fail  acl ")
	assert.Contains(t, r.stdout, "~redlock-check:* ~quorumlock:* &quorumlock:*")
}

// Bad flags and arguments exit 2 with one line on stderr.
func TestCheck_UsageErrors_ExitTwo(t *testing.T) {
	for _, tt := range []struct {
		name string
		env  []string
		args []string
		says string
	}{
		{"no masters", nil, []string{"check"}, "no masters"},
		{"an argument", nil, []string{"check", "--nodes", "127.0.0.1:1", "key"}, `check takes no arguments, got "key"`},
		{"unknown flag", nil, []string{"check", "--frobnicate"}, "-frobnicate"},
		{"zero ttl", nil, []string{"check", "--nodes", "127.0.0.1:1", "--ttl", "0s"}, "--ttl 0s is not positive"},
		{"ttl without a unit", nil, []string{"check", "--nodes", "127.0.0.1:1", "--ttl", "10"}, "no unit"},
		{"zero timeout", nil, []string{"check", "--nodes", "127.0.0.1:1", "--timeout", "0s"}, "--timeout 0s is not positive"},
		{"reserved key prefix", nil, []string{"check", "--nodes", "127.0.0.1:1", "--key-prefix", "quorumlock:x"}, `key "quorumlock:x" uses the reserved prefix`},
		{"ttl within the drift reserve", nil, []string{"check", "--nodes", "127.0.0.1:1", "--ttl", "2ms"}, "ttl 2ms leaves no validity"},
		{"namespace with braces", nil, []string{"check", "--nodes", "127.0.0.1:1", "--namespace", "{app}:"}, "namespace"},
		{"bad address", []string{nodesEnv + "=localhost"}, []string{"check"}, `"localhost"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := bin.run(t, tt.env, tt.args...)
			assert.Equal(t, exitUsage, r.code, "%v", r)
			if lines := r.stderrLines(); assert.Len(t, lines, 1, "%v", r) {
				assert.Contains(t, lines[0], tt.says)
			}
			assert.Empty(t, r.stdout)
		})
	}
}

// The --tls flags reach the masters as for the other commands; without
// them, a TLS master is unreachable, with the hint to use TLS.
func TestCheck_TLSFlags(t *testing.T) {
	pki := newTestPKI(t, "check")
	nodes := tlsMasters(t, 3, pki)
	r := bin.run(t, nil, append([]string{"check", "--nodes", nodes, "--restart-guard", "0"}, tlsArgs(pki, pki)...)...)
	require.Equal(t, exitOK, r.code, "%v", r)
	assert.Contains(t, r.stdout, "\nREADY: 3 of 3 masters pass, the quorum is 2\n")

	r = bin.run(t, nil, "check", "--nodes", nodes, "--restart-guard", "0", "--timeout", "10s")
	require.Equal(t, exitError, r.code, "%v", r)
	assert.Contains(t, r.stdout, "  fail  reach       unreachable: ")
	assert.Contains(t, r.stdout, "rediss:// (or --tls) if it speaks TLS")
}
