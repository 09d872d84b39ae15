package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestDemo_InProcessMasters_ExitsZero(t *testing.T) {
	// A longer TTL than the default leaves room for a slow, shared box;
	// --hold stays below half of it.
	r := bin.run(t, nil, "demo", "--duration", "4s", "--ttl", "2s", "--node-timeout", "200ms")
	assert.Equal(t, 0, r.code, "%v", r)
	assert.Contains(t, r.stdout, "started 5 in-process Redis-protocol masters")
	assert.Contains(t, r.stdout, "got the lock")
	assert.Contains(t, r.stdout, "killed: 2 of 5 up, fewer than the quorum of 3")
	assert.Contains(t, r.stdout, "restarted with their data: 5 of 5 up")
	assert.Contains(t, r.stdout, "max concurrent holders  1\n")
	assert.Contains(t, r.stdout, "strictly increasing")
	assert.Empty(t, r.stderr)
}

func TestDemo_RealMasters_KillsNothing(t *testing.T) {
	_, nodes := masters(t, 3)
	r := bin.run(t, nil, "demo", "--nodes", nodes, "--restart-guard", "0", "--duration", "2s", "--node-timeout", "100ms")
	assert.Equal(t, 0, r.code, "%v", r)
	assert.Contains(t, r.stdout, "does not stop real masters")
	assert.NotContains(t, r.stdout, "killed")
	assert.Contains(t, r.stdout, "max concurrent holders  1\n")
}
