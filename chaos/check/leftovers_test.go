package check

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestLeftovers(t *testing.T) {
	failed := map[string]bool{"failed-1": true, "failed-2": true}
	tests := []struct {
		name          string
		keys          []KeyState
		failed, noTTL int
	}{
		{name: "clean masters"},
		{name: "a successful holder's key expiring is fine", keys: []KeyState{{Key: "k", Tokens: []string{"ok"}, PTTL: time.Second}}},
		{name: "a failed attempt left its token", keys: []KeyState{{Key: "k", Tokens: []string{"failed-1"}, PTTL: time.Second}}, failed: 1},
		{name: "a reentrant hold of a failed attempt", keys: []KeyState{{Key: "k", Tokens: []string{"ok", "failed-2"}, PTTL: time.Second}}, failed: 1},
		{name: "a key without expiry", keys: []KeyState{{Key: "k", Tokens: []string{"ok"}, PTTL: -time.Millisecond}}, noTTL: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Leftovers(tt.keys, failed)
			assert.Len(t, r.Failed, tt.failed)
			assert.Len(t, r.NoTTL, tt.noTTL)
			assert.Equal(t, len(tt.keys), r.Keys)
			assert.Equal(t, tt.failed == 0 && tt.noTTL == 0, r.OK())
		})
	}
}
