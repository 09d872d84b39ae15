package info

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// Every combination of the three replication fields that decide it.
func TestFields_Promoted(t *testing.T) {
	for _, role := range []string{"master", "slave", ""} {
		for _, id2 := range []string{"", strings.Repeat("0", 40), "0", "old-replid"} {
			for _, off := range []string{"-1", "0", "5000", ""} {
				f := Fields{Role: role, ReplID2: id2, SecondOffset: off}
				want := role == "master" && id2 == "old-replid" && off != "-1"
				assert.Equal(t, want, f.Promoted(), "role %q, master_replid2 %q, second_repl_offset %q", role, id2, off)
			}
		}
	}
}

func TestFields_MayEvict(t *testing.T) {
	policies := []string{"noeviction", "allkeys-lru", "allkeys-lfu", "allkeys-random",
		"volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl", ""}
	for _, mem := range []int64{-1, 0, 1, 1 << 30} {
		for _, p := range policies {
			want := mem > 0 && p != "noeviction"
			assert.Equal(t, want, Fields{MaxMemory: mem, Policy: p}.MayEvict(), "maxmemory %d, policy %q", mem, p)
		}
	}
}

func TestFields_TooOld(t *testing.T) {
	for v, old := range map[string]bool{
		"2.8.24": true, "3.2.12": true, "4.0.14": true, "5.0.14": true, "5": true,
		"6.0.16": false, "6.2.14": false, "7.0.15": false, "7.2.4": false, "10.0.0": false,
		"df-1.2": false, "": false, "v5.0": false, "-1.0": true,
	} {
		assert.Equal(t, old, Fields{Version: v}.TooOld(), "redis_version %q", v)
	}
}

func TestFields_StampedAt(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	base := Fields{RunID: "r3", ReplID: "new", Uptime: 7200 * time.Second}
	for _, tc := range []struct {
		name  string
		stamp Stamp
		ago   time.Duration // how long before now, when ok
		ok    bool
	}{
		{"no stamp", Stamp{}, 0, false},
		{"stamped 4s before", Stamp{Identity: "r3 new", Uptime: 7196 * time.Second, OK: true}, 3 * time.Second, true},
		{"stamped this second", Stamp{Identity: "r3 new", Uptime: 7200 * time.Second, OK: true}, 0, true},
		{"stamped a second before", Stamp{Identity: "r3 new", Uptime: 7199 * time.Second, OK: true}, 0, true},
		{"stamped long before", Stamp{Identity: "r3 new", Uptime: 100 * time.Second, OK: true}, 7099 * time.Second, true},
		{"another run_id", Stamp{Identity: "m3 new", Uptime: 100 * time.Second, OK: true}, 0, false},
		{"another replid", Stamp{Identity: "r3 old", Uptime: 100 * time.Second, OK: true}, 0, false},
		{"from the future", Stamp{Identity: "r3 new", Uptime: 7300 * time.Second, OK: true}, 0, false},
		{"unread", Stamp{Identity: "r3 new", Uptime: 100 * time.Second}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := base
			f.Stamp = tc.stamp
			at, ok := f.StampedAt(now)
			assert.Equal(t, tc.ok, ok)
			if tc.ok {
				assert.Equal(t, now.Add(-tc.ago), at)
			} else {
				assert.True(t, at.IsZero())
			}
		})
	}
}

func TestYoungest(t *testing.T) {
	for up, want := range map[time.Duration]time.Duration{
		0: 0, time.Second: 0, 2 * time.Second: time.Second, time.Hour: time.Hour - time.Second,
		1500 * time.Millisecond: 500 * time.Millisecond, -time.Second: 0,
	} {
		assert.Equal(t, want, Youngest(up), "uptime %v", up)
	}
}
