package redlock

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/internal/redistest"
)

// The user's permissions are tried for real: the rule aclRule gives
// passes, and each permission taken from it fails the step that needs it,
// with the rule as the fix.
func TestIntegration_Check_ACL(t *testing.T) {
	runCases(t, []checkCase{
		{name: "the lock's own rule", user: true, args: lockUser(), ready: true, want: []want{
			{"acl", CheckOK, "every script", ""},
			{"pubsub", CheckOK, "heard", ""},
			{"cleanup", CheckOK, "deleted", ""},
		}},
		{name: "EVALSHA denied", user: true, args: lockUser("-evalsha"), want: []want{
			{"acl", CheckFail, "EVALSHA: NOPERM", "+evalsha"},
		}},
		{name: "EVAL denied", user: true, args: lockUser("-eval"), want: []want{
			{"acl", CheckFail, "EVAL: NOPERM", "+eval"},
		}},
		{name: "keys outside the user's pattern", user: true, args: checkUser("~other:*", "&app:lock:*", "-@all", aclCommandsArgs()), want: []want{
			{"acl", CheckFail, "NOPERM", "~app:lock:*"},
		}},
		{name: "HSET denied: reentrant locks fail", user: true, args: lockUser("-hset"), want: []want{
			{"acl", CheckFail, "reentrant acquire failed", "+hset"},
			{"cleanup", CheckOK, "deleted", ""},
		}},
		{name: "ZADD denied: a waiter cannot queue", user: true, args: lockUser("-zadd"), want: []want{
			{"acl", CheckFail, "queue of a waiter failed", "+zadd"},
			{"cleanup", CheckOK, "deleted", ""},
		}},
		{name: "ZCARD denied: a semaphore's permits fail", user: true, args: lockUser("-zcard"), want: []want{
			{"acl", CheckFail, "semaphore's permit failed", "+zcard"},
			{"cleanup", CheckOK, "deleted", ""},
		}},
		{name: "ZREMRANGEBYSCORE denied: a semaphore's permits fail", user: true, args: lockUser("-zremrangebyscore"), want: []want{
			{"acl", CheckFail, "semaphore's permit failed", "+zremrangebyscore"},
		}},
		{name: "EXISTS denied: every acquire fails", user: true, args: lockUser("-exists"), want: []want{
			{"acl", CheckFail, "the lock's acquire failed", "+exists"},
		}},
	})
}

// The check leaves nothing of its own on a master: only the fence floor and
// its stamp, which any lock leaves.
func TestIntegration_Check_LeavesNothingBehind(t *testing.T) {
	srv := redistest.Start(t, 1, redistest.Ephemeral)
	m := checkAt(t, srv[0].Addr())
	require.True(t, m.Ready(), describe(m))
	keys, err := redistest.ListAt(srv[0].Addr(), "KEYS", "*")
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{checkNS + "quorumlock:fence-floor", checkNS + "quorumlock:fence-floor:stamp"}, keys)
}

// The rule to grant has channel patterns only where Redis has them (6.2
// and later), and the cluster's commands only on a cluster node.
func TestCheck_ACLRule(t *testing.T) {
	for _, tt := range []struct {
		name               string
		ns                 string
		sharded, channels  bool
		keys               []string
		starts, notContain string
	}{
		{"namespace", "app:lock:", false, true, nil, "~app:lock:* &app:lock:* -@all +evalsha", "+spublish"},
		{"no namespace", "", false, true, []string{"jobs:*"}, "~jobs:* ~quorumlock:* &quorumlock:* -@all +evalsha", "+spublish"},
		{"before 6.2", "app:lock:", false, false, nil, "~app:lock:* -@all +evalsha", "&"},
		{"cluster", "app:lock:", true, true, nil, "~app:lock:* &app:lock:* -@all", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rule := aclRule(tt.ns, tt.sharded, tt.channels, tt.keys...)
			assert.True(t, strings.HasPrefix(rule, tt.starts), rule)
			if tt.notContain != "" {
				assert.NotContains(t, rule, tt.notContain)
			}
			assert.Equal(t, tt.sharded, strings.HasSuffix(rule, aclClusterCommands), rule)
		})
	}
	for v, none := range map[string]bool{"5.0.7": true, "6.0.16": true, "6.2.0": false, "7.0.15": false, "7.4": false, "x": false, "": false} {
		assert.Equal(t, none, noChannelACL(v), v)
	}
}

// On Redis 6.0 a user is checked the same way, and the rule to grant has
// no channel pattern, which 6.0 would refuse.
func TestIntegration_Check_ACLOnRedis60(t *testing.T) {
	rule := strings.Fields(aclRule(checkNS, false, false))
	ok := masters60(t, 1, checkUser(rule...)...)
	m := checkAt(t, "redis://app:secret@"+ok[0].Addr(), WithRestartGuard(0))
	assert.True(t, m.Ready(), describe(m))
	assert.Equal(t, CheckOK, finding(t, m, "acl").Level, describe(m))

	bad := masters60(t, 1, checkUser(append(rule, "-hset")...)...)
	m = checkAt(t, "redis://app:secret@"+bad[0].Addr(), WithRestartGuard(0))
	f := finding(t, m, "acl")
	assert.Equal(t, CheckFail, f.Level, describe(m))
	assert.Contains(t, f.Fix, strings.Join(rule, " "))
	assert.NotContains(t, f.Fix, "&")
}
