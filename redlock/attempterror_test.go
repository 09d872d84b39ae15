package redlock

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// detail returns the *AttemptError detail of err, failing the test when
// err has none.
func detail(t *testing.T, err error) string {
	t.Helper()
	var ae *AttemptError
	if !errors.As(err, &ae) {
		t.Fatalf("%v: not an *AttemptError", err)
	}
	return ae.Detail()
}

func TestAttemptError_OneLineAtMost200(t *testing.T) {
	e := &AttemptError{head: "redlock: not obtained", cause: strings.Repeat("é", 150) + "\nsecond line", Waited: 3100 * time.Millisecond, ended: context.Canceled}
	msg := e.Error()
	assert.NotContains(t, msg, "\n")
	assert.LessOrEqual(t, len(msg), 200)
	assert.True(t, strings.HasPrefix(msg, "redlock: not obtained after 3.1s: éé"), msg)
	assert.True(t, strings.HasSuffix(msg, "..."), msg)
	assert.ErrorIs(t, e, context.Canceled)
}

// The detail lists each master's outcome, and the fix when there is one.
func TestAttemptError_Detail(t *testing.T) {
	e := &AttemptError{
		Masters: []MasterAnswer{
			{Node: 0, Addr: "a:1", Answer: MasterAgreed},
			{Node: 1, Addr: "b:2", Answer: MasterAbstained, Why: "new or restarted, up 0s, votes in 8s"},
			{Node: 2, Addr: "c:3", Answer: MasterHeld, Err: &NodeError{Node: 2, Addr: "c:3", Err: ErrHeld}},
		},
		Fix: "NOPERM: grant it",
	}
	assert.Equal(t, "redlock: node 0 (a:1): agreed\n"+
		"redlock: node 1 (b:2): not counted: new or restarted, up 0s, votes in 8s\n"+
		"redlock: node 2 (c:3): held by another owner\n"+
		"fix: NOPERM: grant it", e.Detail())
}

func TestGaveUp_KeepsTheAttemptsError(t *testing.T) {
	e := &AttemptError{head: "redlock: not obtained", cause: "held by another client (3 of 5 masters)", wraps: []error{ErrNotObtained}}
	err := gaveUp(e, 3*time.Second, context.DeadlineExceeded)
	assert.Equal(t, "redlock: not obtained after 3s: held by another client (3 of 5 masters); gave up: context deadline exceeded", err.Error())
	assert.ErrorIs(t, err, ErrNotObtained)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, "redlock: not obtained: held by another client (3 of 5 masters)", e.Error(), "the attempt's own error is left as it was")
	plain := errors.New("x")
	assert.ErrorIs(t, gaveUp(plain, time.Second, context.Canceled), context.Canceled)
}
