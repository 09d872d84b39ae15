package main

import (
	"bytes"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAddrs_FlagOverEnv_TrimmedAndChecked(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == nodesEnv {
				return v
			}
			return ""
		}
	}
	tests := []struct {
		name, flag, env string
		want            []string
		wantErr         string
	}{
		{name: "none", want: nil},
		{name: "env", env: "a:1, b:2 ,redis://c:3", want: []string{"a:1", "b:2", "redis://c:3"}},
		{name: "flag wins", flag: "x:1", env: "a:1", want: []string{"x:1"}},
		{name: "empty entry", flag: "a:1,,b:2", wantErr: `--nodes "a:1,,b:2": entry 2 is empty`},
		{name: "empty entry in env", env: "a:1,", wantErr: `$REDLOCK_NODES "a:1,": entry 2 is empty`},
		{name: "a cluster and its seeds", flag: "redis+cluster://a:1,b:2,redis://c:3,d:4",
			want: []string{"redis+cluster://a:1,b:2", "redis://c:3", "d:4"}},
		{name: "clusters separated by semicolons", flag: "redis+cluster://a:1,b:2; rediss+cluster://c:3,d:4;e:5",
			want: []string{"redis+cluster://a:1,b:2", "rediss+cluster://c:3,d:4", "e:5"}},
		{name: "empty entry between clusters", flag: "redis+cluster://a:1;;e:5", wantErr: `--nodes "redis+cluster://a:1;;e:5": entry 2 is empty`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := clientFlags{nodes: tt.flag}
			got, err := c.addrs(env(tt.env))
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Equal(t, tt.wantErr, err.Error())
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestGuardFlag_AutoDurationOrError(t *testing.T) {
	var g guardFlag
	require.NoError(t, g.Set("30s"))
	assert.Equal(t, guardFlag{d: 30 * time.Second}, g)
	assert.Equal(t, "30s", g.String())
	require.NoError(t, g.Set("0"))
	assert.Equal(t, guardFlag{}, g)
	require.NoError(t, g.Set("auto"))
	assert.Equal(t, "auto", g.String())
	assert.Error(t, g.Set("-1s"))
	assert.Error(t, g.Set("soon"))
}

func TestExitCode_MapsErrorsToStatusAndOneLine(t *testing.T) {
	code, msg := exitCode(nil)
	assert.Equal(t, 0, code)
	assert.Empty(t, msg)
	code, msg = exitCode(fail(exitLost, "lost\nfor good"))
	assert.Equal(t, exitLost, code)
	assert.Equal(t, "lost; for good", msg)
	code, msg = exitCode(errors.New("redlock: lock not obtained: redlock: node 0 (a:1): refused"))
	assert.Equal(t, exitError, code)
	assert.Equal(t, "lock not obtained: node 0 (a:1): refused", msg)
	code, msg = exitCode(exitWith(7))
	assert.Equal(t, 7, code)
	assert.Empty(t, msg)
}

func TestShortHolder(t *testing.T) {
	assert.Equal(t, "-", shortHolder(""))
	assert.Equal(t, "0123abcd…", shortHolder("0123abcdef0123456789abcdef012345"))
	assert.Equal(t, "owner:web-1", shortHolder("owner:web-1"))
	assert.Equal(t, "owner:a-very-long-owner…", shortHolder("owner:a-very-long-owner-name"))
	assert.Equal(t, "?hash", shortHolder("?hash"))
}

func TestKillsToLoseQuorum(t *testing.T) {
	for _, tt := range []struct{ n, q, want int }{{5, 0, 3}, {5, 3, 3}, {5, 4, 2}, {3, 0, 2}, {1, 0, 1}, {4, 0, 2}} {
		assert.Equal(t, tt.want, killsToLoseQuorum(tt.n, tt.q), "n=%d q=%d", tt.n, tt.q)
	}
}

func TestLogger_QuietUnlessVerbose_OneLinePerRecord(t *testing.T) {
	var buf bytes.Buffer
	log := newLogger(&buf, false)
	log.Debug("redlock: extension failed", "key", "k")
	log.Warn("redlock: lock lost", "key", "k", "fence", 7, "cause", "no quorum")
	assert.Equal(t, "redlock: warning: lock lost key=k fence=7 cause=\"no quorum\"\n", buf.String())

	buf.Reset()
	log = newLogger(&buf, true).With("worker", 2).WithGroup("g")
	log.Debug("release failed", slog.Int("n", 1))
	assert.Equal(t, "redlock: debug: release failed worker=2 g.n=1\n", buf.String())
}
