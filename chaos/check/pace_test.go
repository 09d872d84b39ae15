package check

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/quorumlock/quorumlock/chaos/history"
)

// Pace fires on a call that made more attempts than its wait allows, and on
// no other.
func TestPace(t *testing.T) {
	call := func(wait time.Duration, tries int) history.Attempt {
		return history.Attempt{Client: 1, Key: "k", Start: time.Second, End: time.Second + wait, Tries: tries}
	}
	for _, tc := range []struct {
		name  string
		call  history.Attempt
		fires bool
	}{
		{"one attempt", call(time.Millisecond, 1), false},
		{"not counted", call(time.Second, 0), false},
		{"a short wait at the base", call(time.Millisecond, paceBase), false},
		{"a short wait past it", call(time.Millisecond, paceBase+1), true},
		{"a second at the limit", call(time.Second, paceBase+paceRate), false},
		{"a second past it", call(time.Second, paceBase+paceRate+1), true},
		{"a spin: 1000 in 500 ms", call(500*time.Millisecond, 1000), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Pace([]history.Attempt{call(time.Millisecond, 1), tc.call})
			if tc.fires {
				assert.Len(t, got, 1)
			} else {
				assert.Empty(t, got)
			}
		})
	}
}
