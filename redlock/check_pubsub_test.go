package redlock

import (
	"testing"
)

// A subscription or an announcement the user may not make is a warning:
// waiters fall back to their backoff.
func TestIntegration_Check_PubSub(t *testing.T) {
	runCases(t, []checkCase{
		{name: "no channel", user: true, args: checkUser("~app:lock:*", "&other:*", "-@all", aclCommandsArgs()), ready: true, want: []want{
			{"acl", CheckOK, "every script", ""},
			{"pubsub", CheckWarn, "cannot subscribe", "&app:lock:*"},
		}},
		{name: "PUBLISH denied", user: true, args: lockUser("-publish"), ready: true, want: []want{
			{"pubsub", CheckWarn, "PUBLISH denied", "+publish"},
		}},
	})
}
