package info

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// master is the replies of a healthy master, for tests to spoil.
type master struct {
	runID, version, role, replID, replID2, secondOff, policy string
	up                                                       int64
	maxmemory                                                int64
	config, stamp                                            any
}

func plainMaster(runID string, up int64) master {
	return master{runID: runID, up: up, version: "7.0.15", role: "master",
		replID: "r-" + runID, replID2: strings.Repeat("0", 40), secondOff: "-1",
		policy: "noeviction", config: []any{}}
}

func (m master) replies() Replies {
	return Replies{
		Server:      fmt.Sprintf("# Server\r\nredis_version:%s\r\nrun_id:%s\r\nuptime_in_seconds:%d\r\n", m.version, m.runID, m.up),
		Replication: fmt.Sprintf("# Replication\r\nrole:%s\r\nmaster_replid:%s\r\nmaster_replid2:%s\r\nsecond_repl_offset:%s\r\n", m.role, m.replID, m.replID2, m.secondOff),
		Memory:      fmt.Sprintf("# Memory\r\nmaxmemory:%d\r\nmaxmemory_policy:%s\r\n", m.maxmemory, m.policy),
		Config:      m.config,
		Stamp:       m.stamp,
	}
}

// deniedErr is an error reply as a driver hands it over.
type deniedErr string

func (e deniedErr) Error() string { return string(e) }

func TestParse_Readable(t *testing.T) {
	denied := deniedErr("NOPERM this user has no permissions to run the 'info' command")
	for _, tc := range []struct {
		name       string
		rd         func(r *Replies)
		unreadable string // a part of the reason, "" when readable
		up         time.Duration
	}{
		{"all there", func(*Replies) {}, "", 42 * time.Second},
		{"INFO denied", func(r *Replies) { r.Server, r.Replication, r.Memory = denied, denied, denied }, "NOPERM", 0},
		{"INFO server denied", func(r *Replies) { r.Server = denied }, "INFO server: NOPERM", 0},
		{"INFO replication denied", func(r *Replies) { r.Replication = denied }, "INFO replication: NOPERM", 0},
		{"INFO memory denied", func(r *Replies) { r.Memory = denied }, "INFO memory: NOPERM", 0},
		{"INFO server not a string", func(r *Replies) { r.Server = []any{"x"} }, "INFO server: unexpected reply", 0},
		{"INFO server nil", func(r *Replies) { r.Server = nil }, "INFO server: unexpected reply", 0},
		{"no uptime", func(r *Replies) { r.Server = "# Server\r\nrun_id:abc\r\n" }, "uptime_in_seconds", 0},
		{"no run_id", func(r *Replies) { r.Server = "uptime_in_seconds:42\r\n" }, "run_id", 0},
		{"negative uptime", func(r *Replies) { r.Server = "run_id:abc\r\nuptime_in_seconds:-1\r\n" }, "uptime_in_seconds", 0},
		{"garbage uptime", func(r *Replies) { r.Server = "run_id:abc\r\nuptime_in_seconds:soon\r\n" }, "uptime_in_seconds", 0},
		{"uptime beyond a Duration", func(r *Replies) { r.Server = "run_id:abc\r\nuptime_in_seconds:9300000000\r\n" }, "uptime_in_seconds", 0},
		{"empty", func(r *Replies) { r.Server = "" }, "uptime_in_seconds, run_id", 0},
		{"no role", func(r *Replies) { r.Replication = "# Replication\r\n" }, "role", 0},
		{"no policy", func(r *Replies) { r.Memory = "# Memory\r\nmaxmemory:0\r\n" }, "maxmemory_policy", 0},
		{"no maxmemory", func(r *Replies) { r.Memory = "# Memory\r\nmaxmemory_policy:noeviction\r\n" }, "maxmemory", 0},
		{"CONFIG denied is still readable", func(r *Replies) { r.Config = denied }, "", 42 * time.Second},
		{"CONFIG odd is still readable", func(r *Replies) { r.Config = []any{"appendonly"} }, "", 42 * time.Second},
		{"stamp of another type is ignored", func(r *Replies) { r.Stamp = int64(3) }, "", 42 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rd := plainMaster("abc", 42).replies()
			tc.rd(&rd)
			f := Parse(rd)
			if tc.unreadable == "" {
				require.Empty(t, f.Unreadable)
				assert.Equal(t, tc.up, f.Uptime)
				assert.Equal(t, "abc", f.RunID)
				return
			}
			assert.Contains(t, f.Unreadable, tc.unreadable)
			assert.Equal(t, Fields{Unreadable: f.Unreadable}, f, "nothing else is set on an unreadable read")
		})
	}
}

func TestParse_Fields(t *testing.T) {
	m := plainMaster("abc", 7200)
	m.version, m.replID2, m.secondOff, m.maxmemory, m.policy = "6.2.14", "old", "5000", 1<<20, "allkeys-lru"
	m.config = []any{"appendonly", "yes", "appendfsync", "always"}
	m.stamp = "abc r-abc 17 7100"
	assert.Equal(t, Fields{
		Uptime: 7200 * time.Second, RunID: "abc", Version: "6.2.14", Role: "master",
		ReplID: "r-abc", ReplID2: "old", SecondOffset: "5000", MaxMemory: 1 << 20, Policy: "allkeys-lru",
		Durable: true, Stamp: Stamp{Identity: "abc r-abc", Uptime: 7100 * time.Second, OK: true},
	}, Parse(m.replies()))
}

func TestParse_Durable(t *testing.T) {
	for _, appendonly := range []string{"yes", "no", ""} {
		for _, fsync := range []string{"always", "everysec", "no", ""} {
			t.Run(appendonly+"/"+fsync, func(t *testing.T) {
				m := plainMaster("abc", 1)
				var cfg []any
				if appendonly != "" {
					cfg = append(cfg, "appendonly", appendonly)
				}
				if fsync != "" {
					cfg = append(cfg, "appendfsync", fsync)
				}
				m.config = cfg
				f := Parse(m.replies())
				require.Empty(t, f.Unreadable)
				assert.Equal(t, appendonly == "yes" && fsync == "always", f.Durable)
				assert.Empty(t, f.ConfigDenied)
			})
		}
	}
	m := plainMaster("abc", 1)
	m.config = deniedErr("NOPERM config")
	f := Parse(m.replies())
	assert.False(t, f.Durable)
	assert.Equal(t, "CONFIG GET: NOPERM config", f.ConfigDenied)
}

func TestParseStamp(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Stamp
	}{
		{"r3 repl 1234 7196", Stamp{Identity: "r3 repl", Uptime: 7196 * time.Second, OK: true}},
		{"  r3   repl 1234 0 ", Stamp{Identity: "r3 repl", OK: true}},
		{"r3 repl 1234", Stamp{}},
		{"r3 repl 1234 5 6", Stamp{}},
		{"r3 repl 1234 -1", Stamp{}},
		{"r3 repl 1234 soon", Stamp{}},
		{"r3 repl 1234 9300000000", Stamp{}},
		{"", Stamp{}},
	} {
		t.Run(tc.in, func(t *testing.T) {
			assert.Equal(t, tc.want, parseStamp(tc.in))
		})
	}
}

func TestRepliesOf(t *testing.T) {
	all := []any{"s", "r", "m", []any{}, "st"}
	for n := 0; n <= len(all); n++ {
		r := RepliesOf(all[:n])
		got := []any{r.Server, r.Replication, r.Memory, r.Config, r.Stamp}
		for i := range got {
			if i < n {
				assert.Equal(t, all[i], got[i])
			} else {
				err, ok := got[i].(error)
				require.True(t, ok, "a missing answer reads as an error")
				assert.EqualError(t, err, "no answer")
			}
		}
	}
	assert.Len(t, Questions("stamp"), 5, "one question per reply")
	assert.Equal(t, []string{"GET", "stamp"}, Questions("stamp")[4])
}

// Parse returns, never panics, whatever a server or a broken driver hands
// over; what it does read is consistent.
func FuzzParse(f *testing.F) {
	m := plainMaster("abc", 42).replies()
	f.Add(m.Server.(string), m.Replication.(string), m.Memory.(string), "appendonly", "yes", "abc r-abc 1 2")
	f.Add("", "", "", "", "", "")
	f.Add("uptime_in_seconds:-9\r\n", "role", ":", "x", "", "a b c -1")
	f.Fuzz(func(t *testing.T, server, repl, mem, k, v, stamp string) {
		for _, cfg := range []any{[]any{k, v}, []any{k}, k, errors.New(v), nil} {
			got := Parse(Replies{Server: server, Replication: repl, Memory: mem, Config: cfg, Stamp: stamp})
			if got.Unreadable != "" {
				if got != (Fields{Unreadable: got.Unreadable}) {
					t.Fatalf("unreadable with fields set: %+v", got)
				}
				continue
			}
			if got.Uptime < 0 || got.Stamp.Uptime < 0 || got.RunID == "" || got.Role == "" {
				t.Fatalf("readable but inconsistent: %+v", got)
			}
			_, _ = got.StampedAt(time.Unix(0, 0))
			_ = got.Promoted() || got.MayEvict() || got.TooOld()
		}
	})
}
