package bench

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/internal/redistest"
)

// scriptBatch is how many calls BenchmarkScriptCost sends before it reads
// their replies: enough that a master's CPU goes to the calls, not to
// waking up for each.
const scriptBatch = 64

// BenchmarkScriptCost measures what an acquire and a release cost one
// master, on one connection with scriptBatch calls in flight, so that the
// master's CPU per op is the commands' own cost: an op is one acquire and
// one release of a new key. It compares
//
//   - scripts=library: the library's acquire.lua and release.lua, with the
//     keys and arguments the library sends for a plain lock (a proposal,
//     the master's identity as the hint, an announcement);
//   - scripts=empty: two scripts that only reply, taking the same keys and
//     arguments: the cost of the calls themselves;
//   - scripts=setnx-del: SET NX PX and a compare-and-delete written as
//     scripts, with lib.lua and the same keys and arguments;
//   - redsync: a plain SET NX PX and a one-key compare-and-delete script,
//     as go-redsync sends them.
//
// The difference between library and setnx-del is what the fence, the
// tombstone, the stamp and the announcement cost the master.
func BenchmarkScriptCost(b *testing.B) {
	servers := redistest.Start(b, 1, redistest.Ephemeral)
	addr := redistest.Addrs(servers)[0]
	meter, err := NewMeter([]string{addr})
	require.NoError(b, err)
	defer meter.Close()
	conn, err := redis.Dial("tcp", addr, redis.DialReadTimeout(10*time.Second))
	require.NoError(b, err)
	defer conn.Close()

	src := libScripts(b)
	lib := src.lib
	type pair struct{ acquire, release *redis.Script }
	variants := []struct {
		name string
		pair pair // acquire nil: redsync's plain SET NX PX
	}{
		{"scripts=library", pair{redis.NewScript(7, src.acquire), redis.NewScript(4, src.release)}},
		{"scripts=empty", pair{redis.NewScript(7, "return {1, 1}"), redis.NewScript(4, "return 1")}},
		{"scripts=setnx-del", pair{
			redis.NewScript(7, lib+"\nif redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return {1, 1} end\nreturn {0, 0}"),
			redis.NewScript(4, lib+"\nif held(KEYS[1], ARGV[1], '') then redis.call('DEL', KEYS[1]) return 1 end\nreturn 0"),
		}},
		{"redsync", pair{nil, redis.NewScript(1, `if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) else return 0 end`)}},
	}
	idPool := NewRedigoPool(addr)
	hint := identity(redigoMaster{idPool}) // as the scripted floors send it
	idPool.Close()
	require.NotEmpty(b, hint, "the master's run_id and master_replid")
	const prefix = "quorumlock:"
	ttl := strconv.FormatInt(lockTTL.Milliseconds(), 10)
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			for _, s := range []*redis.Script{v.pair.acquire, v.pair.release} {
				if s != nil {
					require.NoError(b, s.Load(conn))
				}
			}
			send := func(acquire bool, key, token string) error {
				switch {
				case v.pair.acquire == nil && acquire:
					return conn.Send("SET", key, token, "NX", "PX", ttl)
				case v.pair.acquire == nil:
					return v.pair.release.SendHash(conn, key, token)
				case acquire:
					proposal := strconv.FormatInt(time.Now().Add(-100*time.Millisecond).UnixMilli()*1024, 10)
					return v.pair.acquire.SendHash(conn, key, prefix+"fence:"+key, prefix+"fence-floor", prefix+"void:"+token,
						prefix+"fence-floor:stamp", prefix+"queue:"+key, prefix+"queue-leases:"+key,
						token, ttl, proposal, hint)
				}
				return v.pair.release.SendHash(conn, key, prefix+"fence:"+key, prefix+"queue:"+key, prefix+"queue-leases:"+key,
					token, prefix+"released:"+key)
			}
			roundTrip := func(acquire bool, first, n int) {
				for j := range n {
					key, token := fmt.Sprintf("cost:%s:%d", v.name, first+j), fmt.Sprintf("t%d", first+j)
					require.NoError(b, send(acquire, key, token))
				}
				require.NoError(b, conn.Flush())
				for range n {
					_, err := conn.Receive()
					require.NoError(b, err)
				}
			}
			roundTrip(true, -scriptBatch, scriptBatch) // the fence stamp, the floor
			roundTrip(false, -scriptBatch, scriptBatch)
			before, err := meter.Read()
			require.NoError(b, err)
			b.ResetTimer()
			for i := 0; i < b.N; i += scriptBatch {
				n := min(scriptBatch, b.N-i)
				roundTrip(true, i, n)
				roundTrip(false, i, n)
			}
			b.StopTimer()
			after, err := meter.Read()
			require.NoError(b, err)
			d := after.Sub(before)
			b.ReportMetric(micros(d.MastersCPU)/float64(b.N), "master-cpu-µs/op")
			b.ReportMetric(float64(d.Commands)/float64(b.N), "master-commands/op") // the scripts' own commands count
			left, err := redis.Int(conn.Do("DBSIZE"))
			require.NoError(b, err)
			require.LessOrEqual(b, left, 2, "every key released: only the floor and its stamp stay")
		})
	}
}
