package sqltest_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/fencing"
	"github.com/quorumlock/quorumlock/fencing/sqltest"
)

// attempt is one writer's transaction and how it ended.
type attempt struct {
	writer   int
	resource string
	fence    int64
	outcome  string // "committed", "refused", "rolled back" or "failed"
	stale    *fencing.StaleError
	err      error
}

// TestConcurrentWriters_FencesOnlyGrow has 16 writers hammer three
// resources at once, each with its own interleaved fences (writer w's k-th
// fence is 16k+w+1), so that a writer often comes in after a higher fence
// has committed. Some transactions roll back after their check. Per
// resource, the committed fences in commit order must strictly increase;
// every refusal must name a fence that was committed and is higher than
// the refused one; nothing that rolled back or was refused may be in the
// log; and no transaction may fail otherwise.
func TestConcurrentWriters_FencesOnlyGrow(t *testing.T) {
	const (
		writers   = 16
		perWriter = 25
		resources = 3
	)
	pg := sqltest.StartPostgres(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	for _, d := range sqltest.Both(t, pg) {
		t.Run(d.Name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			g := newGuard(t, d)
			logDDL := "CREATE TABLE writes (seq INTEGER PRIMARY KEY AUTOINCREMENT, resource TEXT NOT NULL, fence BIGINT NOT NULL, writer INTEGER NOT NULL)"
			insert := "INSERT INTO writes (resource, fence, writer) VALUES (?, ?, ?)"
			if d.Dialect == fencing.PostgreSQL {
				logDDL = "CREATE TABLE writes (seq BIGSERIAL PRIMARY KEY, resource TEXT NOT NULL, fence BIGINT NOT NULL, writer INTEGER NOT NULL)"
				insert = "INSERT INTO writes (resource, fence, writer) VALUES ($1, $2, $3)"
			}
			_, err := d.DB.ExecContext(ctx, logDDL)
			require.NoError(t, err)

			var mu sync.Mutex
			var attempts []attempt
			var wg sync.WaitGroup
			start := make(chan struct{})
			began := time.Now()
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(seed, uint64(w)))
					<-start
					for k := range perWriter {
						time.Sleep(time.Duration(rng.Int64N(int64(3 * time.Millisecond))))
						a := attempt{writer: w, resource: fmt.Sprintf("r%d", rng.IntN(resources)), fence: int64(k*writers + w + 1)}
						a.outcome, a.err = writeOnce(ctx, d, g, insert, a, rng)
						errors.As(a.err, &a.stale)
						mu.Lock()
						attempts = append(attempts, a)
						mu.Unlock()
					}
				}()
			}
			close(start)
			wg.Wait()
			took := time.Since(began)

			committed := map[string]map[int64]bool{}
			count := map[string]int{}
			for _, a := range attempts {
				count[a.outcome]++
				if committed[a.resource] == nil {
					committed[a.resource] = map[int64]bool{}
				}
				switch a.outcome {
				case "committed":
					committed[a.resource][a.fence] = true
				case "failed":
					t.Errorf("writer %d, fence %d on %s failed: %v", a.writer, a.fence, a.resource, a.err)
				}
			}
			for _, a := range attempts {
				if a.outcome != "refused" {
					continue
				}
				if assert.NotNil(t, a.stale, "a refusal is a *StaleError: %v", a.err) {
					assert.Equal(t, a.fence, a.stale.Fence)
					assert.Equal(t, a.resource, a.stale.Resource)
					assert.Greater(t, a.stale.Highest, a.fence, "refused by a fence that is not newer")
					assert.True(t, committed[a.resource][a.stale.Highest],
						"fence %d on %s refused by %d, which never committed", a.fence, a.resource, a.stale.Highest)
				}
			}
			for r := range resources {
				res := fmt.Sprintf("r%d", r)
				logged := loggedFences(t, d, res)
				for i := 1; i < len(logged); i++ {
					assert.Greater(t, logged[i], logged[i-1], "%s: committed fences out of order at %d: %v", res, i, logged)
				}
				assert.Len(t, logged, len(committed[res]), "%s: the log holds exactly the committed writes", res)
				for _, f := range logged {
					assert.True(t, committed[res][f], "%s: fence %d in the log was not committed", res, f)
				}
				if len(logged) > 0 {
					assert.Equal(t, logged[len(logged)-1], highest(t, d, g, res), "%s: the recorded fence is the last committed", res)
				}
			}
			assert.Len(t, attempts, writers*perWriter)
			assert.Positive(t, count["refused"], "no write was refused: the test did not interleave")
			assert.Positive(t, count["committed"])
			v, _ := d.Version(ctx)
			t.Logf("%s: %d writers, %d transactions in %v: %d committed, %d refused as stale, %d rolled back, %d failed",
				v, writers, len(attempts), took.Round(time.Millisecond), count["committed"], count["refused"], count["rolled back"], count["failed"])
		})
	}
}

// writeOnce is one transaction: Check, a short random pause, the logged
// write, and a commit, or one time in five a roll-back.
func writeOnce(ctx context.Context, d sqltest.Database, g *fencing.Guard, insert string, a attempt, rng *rand.Rand) (string, error) {
	tx, err := d.DB.BeginTx(ctx, nil)
	if err != nil {
		return "failed", err
	}
	defer tx.Rollback()
	if err := g.Check(ctx, tx, a.resource, a.fence); err != nil {
		if errors.Is(err, fencing.ErrStale) {
			return "refused", err
		}
		return "failed", err
	}
	time.Sleep(time.Duration(rng.Int64N(int64(2 * time.Millisecond))))
	if _, err := tx.ExecContext(ctx, insert, a.resource, a.fence, a.writer); err != nil {
		return "failed", err
	}
	if rng.IntN(5) == 0 {
		return "rolled back", tx.Rollback()
	}
	if err := tx.Commit(); err != nil {
		return "failed", err
	}
	return "committed", nil
}

func loggedFences(t *testing.T, d sqltest.Database, resource string) []int64 {
	t.Helper()
	q := "SELECT fence FROM writes WHERE resource = ? ORDER BY seq"
	if d.Dialect == fencing.PostgreSQL {
		q = "SELECT fence FROM writes WHERE resource = $1 ORDER BY seq"
	}
	rows, err := d.DB.QueryContext(context.Background(), q, resource)
	require.NoError(t, err)
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var f int64
		require.NoError(t, rows.Scan(&f))
		out = append(out, f)
	}
	require.NoError(t, rows.Err())
	return out
}
