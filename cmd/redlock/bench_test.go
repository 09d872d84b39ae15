package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestBench_NotATerminal_PlainLinesAndTable(t *testing.T) {
	_, nodes := masters(t, 3)
	r := bin.run(t, nil, "bench", "--nodes", nodes, "--restart-guard", "0", "--node-timeout", "500ms",
		"--duration", "1500ms", "--concurrency", "2")
	assert.Equal(t, 0, r.code, "%v", r)
	for _, row := range []string{"operation", "acquire+release", "acquire", "release", "failed acquire", "p99"} {
		assert.Contains(t, r.stdout, row)
	}
	assert.NotContains(t, r.stderr, "\r", "no progress bar without a terminal")
	for _, l := range r.stderrLines() {
		assert.True(t, strings.HasPrefix(l, "bench: "), "progress line %q", l)
	}
}
