package redlock

import (
	"errors"
	"testing"
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
