package main

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Three commands at a time under 2 permits on 5 masters: at most 2 run at
// once, and 2 do.
func TestRun_Permits_AtMostKAtOnce(t *testing.T) {
	_, nodes := masters(t, 5)
	dir := t.TempDir()
	env, argv := helper(t, "interval", dir, helperSleep+"=300ms")
	const contenders, runsEach = 3, 2
	results := make(chan result, contenders*runsEach)
	var wg sync.WaitGroup
	for range contenders {
		wg.Go(func() {
			for range runsEach {
				results <- bin.run(t, env, append(runArgs(nodes, "pool", "--ttl", "5s", "--wait", "45s", "--permits", "2"), argv...)...)
			}
		})
	}
	wg.Wait()
	close(results)
	for r := range results {
		require.Equal(t, 0, r.code, "%v", r)
	}

	raw, err := os.ReadFile(filepath.Join(dir, "intervals"))
	require.NoError(t, err)
	type event struct {
		at    int64
		delta int // +1 a start, -1 an end
	}
	var events []event
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		f := strings.Fields(line)
		require.Len(t, f, 3, "line %q", line)
		start, _ := strconv.ParseInt(f[0], 10, 64)
		end, _ := strconv.ParseInt(f[1], 10, 64)
		events = append(events, event{start, 1}, event{end, -1})
	}
	require.Len(t, events, 2*contenders*runsEach)
	slices.SortFunc(events, func(a, b event) int { // an end before a start at the same instant
		if a.at != b.at {
			return int(a.at - b.at)
		}
		return a.delta - b.delta
	})
	running, most := 0, 0
	for _, e := range events {
		running += e.delta
		most = max(most, running)
	}
	assert.Equal(t, 2, most, "commands running at once")
}

func TestRun_Permits_BadFlags(t *testing.T) {
	_, nodes := masters(t, 3)
	env, argv := helper(t, "exit", t.TempDir())
	for _, tc := range []struct {
		args     []string
		inStderr string
	}{
		{[]string{"--permits", "-1"}, "--permits -1 is negative"},
		{[]string{"--every-master"}, "--every-master applies only with --permits"},
		{[]string{"--permits", "2"}, "accept that with --every-master"},
	} {
		r := bin.run(t, env, append(runArgs(nodes, "pool", tc.args...), argv...)...)
		assert.Equal(t, exitUsage, r.code, "%v", r)
		if lines := r.stderrLines(); assert.Len(t, lines, 1, "%v", r) {
			assert.Contains(t, lines[0], tc.inStderr)
		}
	}
	r := bin.run(t, env, append(runArgs(nodes, "pool", "--permits", "2", "--every-master"), argv...)...)
	assert.Equal(t, 0, r.code, "%v", r)
}
