package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// `redlock run` exits only once every master has been sent its delete: the
// deletes that Release leaves running at the quorum are finished by Close
// before the command exits. One master holds writes back for a moment, as a
// distant or busy one does, so its acquire and its delete are stragglers.
func TestRun_ExitsWithNothingLeftOnAnyMaster(t *testing.T) {
	servers, nodes := masters(t, 5)
	slow := servers[4]
	for i := range 10 {
		key := fmt.Sprintf("leftover%d", i)
		conn, err := redis.Dial("tcp", slow.Addr(), redis.DialConnectTimeout(time.Second))
		require.NoError(t, err)
		_, err = conn.Do("CLIENT", "PAUSE", 150, "WRITE")
		conn.Close()
		require.NoError(t, err)
		paused := time.Now()
		r := bin.run(t, nil, "run", "--nodes", nodes, "--restart-guard", "0", "--key", key, "--", "true")
		require.Equal(t, 0, r.code, "%v", r)
		time.Sleep(time.Until(paused.Add(250 * time.Millisecond))) // the pause is over: what was sent has run
		for _, s := range servers {
			conn, err := redis.Dial("tcp", s.Addr(), redis.DialConnectTimeout(time.Second))
			require.NoError(t, err)
			n, err := redis.Int(conn.Do("EXISTS", key))
			conn.Close()
			require.NoError(t, err)
			assert.Zero(t, n, "run %d: %s keeps the key after the command exited", i, s.Addr())
		}
	}
}

// -v shows what the library does on its own: here the extensions of a lock
// held longer than a third of its TTL.
func TestRun_Verbose_ShowsExtensions(t *testing.T) {
	_, nodes := masters(t, 3)
	r := bin.run(t, nil, "run", "-v", "--nodes", nodes, "--restart-guard", "0", "--key", "verbose", "--ttl", "300ms",
		"--", "sleep", "0.5")
	require.Equal(t, 0, r.code, "%v", r)
	assert.True(t, strings.Contains(r.stderr, "lock extended"), "no extension shown: %v", r)
}
