package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/internal/redistest"
)

func TestStatus_HeldKey_ShowsHolderOnEveryMaster(t *testing.T) {
	servers, nodes := masters(t, 3)
	l := holdKey(t, redistest.Addrs(servers), "report")
	args := []string{"status", "--nodes", nodes, "--restart-guard", "0", "--node-timeout", "500ms"}

	r := bin.run(t, nil, append(args, "report", "other")...)
	require.Equal(t, 0, r.code, "%v", r)
	assert.Contains(t, r.stdout, `key "report": HELD by a quorum: 3 of 3 masters agree on holder `+l.Token()[:8]+"…")
	assert.Contains(t, r.stdout, `key "other": FREE`)

	require.NoError(t, servers[2].Kill())
	r = bin.run(t, nil, append(args, "report")...)
	require.Equal(t, 0, r.code, "%v", r)
	assert.Contains(t, r.stdout, "HELD by a quorum: 2 of 3 masters agree")
	assert.Regexp(t, `\n  2 +`+servers[2].Addr()+` +no +no\n`, r.stdout)
	assert.Contains(t, r.stdout, "\n  node 2 ("+servers[2].Addr()+"): ")

	require.NoError(t, servers[1].Kill())
	r = bin.run(t, nil, append(args, "report")...)
	assert.Equal(t, exitError, r.code, "%v", r)
	assert.Contains(t, r.stdout, "UNKNOWN: only 1 of 3 masters can vote")
	if lines := r.stderrLines(); assert.Len(t, lines, 1, "%v", r) {
		assert.Contains(t, lines[0], "only 1 of 3 masters can vote, 2 needed; no answer from "+servers[1].Addr())
	}
}

func TestStatus_FreshMasters_QuarantinedByTheRestartGuard(t *testing.T) {
	_, nodes := masters(t, 3)
	// The guard's window is --ttl plus drift; a master just started is
	// inside it.
	r := bin.run(t, nil, "status", "--nodes", nodes, "--ttl", "1m", "--node-timeout", "500ms", "k")
	assert.Equal(t, exitError, r.code, "%v", r)
	assert.Contains(t, r.stdout, "yes (up")
	assert.Contains(t, r.stdout, "UNKNOWN: only 0 of 3 masters can vote")
	if lines := r.stderrLines(); assert.Len(t, lines, 1, "%v", r) {
		assert.Contains(t, lines[0], "restart guard's quarantine")
	}
}
