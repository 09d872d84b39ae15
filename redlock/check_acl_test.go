package redlock

import (
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
		{name: "EXISTS denied: the cleanup cannot tell", user: true, args: lockUser("-exists"), want: []want{
			{"acl", CheckFail, "extend of a free key failed", "+exists"},
			{"cleanup", CheckWarn, "could not delete", "+exists"},
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
