package sqltest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/fencing"
	"github.com/quorumlock/quorumlock/fencing/sqltest"
)

// newGuard returns a guard for d with its table created.
func newGuard(t *testing.T, d sqltest.Database) *fencing.Guard {
	t.Helper()
	g, err := fencing.New(d.Dialect)
	require.NoError(t, err)
	require.NoError(t, g.CreateTable(context.Background(), d.DB))
	require.NoError(t, g.CreateTable(context.Background(), d.DB), "CreateTable twice")
	return g
}

// checkIn runs Check in a transaction of its own and commits it or rolls it
// back; it returns Check's error.
func checkIn(t *testing.T, d sqltest.Database, g *fencing.Guard, resource string, fence int64, commit bool) error {
	t.Helper()
	ctx := context.Background()
	tx, err := d.DB.BeginTx(ctx, nil)
	require.NoError(t, err)
	cerr := g.Check(ctx, tx, resource, fence)
	if cerr == nil && commit {
		require.NoError(t, tx.Commit())
	} else {
		require.NoError(t, tx.Rollback())
	}
	return cerr
}

func highest(t *testing.T, d sqltest.Database, g *fencing.Guard, resource string) int64 {
	t.Helper()
	h, ok, err := g.Highest(context.Background(), d.DB, resource)
	require.NoError(t, err)
	if !ok {
		return 0
	}
	return h
}

func TestCheck_Contract(t *testing.T) {
	type step struct {
		resource string
		fence    int64
		rollback bool  // roll the transaction back even if Check passed
		stale    int64 // the recorded fence that must refuse it; 0: it must pass
	}
	tests := []struct {
		name  string
		steps []step
		want  map[string]int64 // recorded fences at the end
	}{
		{name: "the first fence of a resource is recorded", steps: []step{{fence: 5}}, want: map[string]int64{"r": 5}},
		{name: "an equal fence passes: the same holder writes again", steps: []step{{fence: 5}, {fence: 5}}, want: map[string]int64{"r": 5}},
		{name: "a higher fence passes and is recorded", steps: []step{{fence: 5}, {fence: 7}}, want: map[string]int64{"r": 7}},
		{name: "a lower fence is stale and changes nothing", steps: []step{{fence: 7}, {fence: 5, stale: 7}, {fence: 6, stale: 7}}, want: map[string]int64{"r": 7}},
		{name: "a rolled-back check records nothing", steps: []step{{fence: 3}, {fence: 9, rollback: true}, {fence: 4}}, want: map[string]int64{"r": 4}},
		{name: "resources are independent", steps: []step{{fence: 9}, {resource: "s", fence: 1}, {resource: "s", fence: 2}, {fence: 8, stale: 9}}, want: map[string]int64{"r": 9, "s": 2}},
		{name: "clock-seeded fences", steps: []step{{fence: 1838337922308188}, {fence: 1838337922308187, stale: 1838337922308188}, {fence: 1838337922308190}}, want: map[string]int64{"r": 1838337922308190}},
	}
	pg := sqltest.StartPostgres(t)
	for _, d := range sqltest.Both(t, pg) {
		t.Run(d.Name, func(t *testing.T) {
			g := newGuard(t, d)
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					prefix := tt.name + "/"
					for i, s := range tt.steps {
						res := s.resource
						if res == "" {
							res = "r"
						}
						err := checkIn(t, d, g, prefix+res, s.fence, !s.rollback)
						if s.stale == 0 {
							assert.NoError(t, err, "step %d: fence %d", i, s.fence)
							continue
						}
						assert.ErrorIs(t, err, fencing.ErrStale, "step %d", i)
						var se *fencing.StaleError
						if assert.ErrorAs(t, err, &se, "step %d", i) {
							assert.Equal(t, fencing.StaleError{Resource: prefix + res, Fence: s.fence, Highest: s.stale}, *se)
						}
					}
					for res, want := range tt.want {
						assert.Equal(t, want, highest(t, d, g, prefix+res), "recorded fence of %s", res)
					}
				})
			}
		})
	}
}

func TestCheck_RejectsBadInput(t *testing.T) {
	pg := sqltest.StartPostgres(t)
	for _, d := range sqltest.Both(t, pg) {
		t.Run(d.Name, func(t *testing.T) {
			g := newGuard(t, d)
			ctx := context.Background()
			tests := []struct {
				name     string
				nilTx    bool
				resource string
				fence    int64
			}{
				{name: "nil transaction", nilTx: true, resource: "r", fence: 1},
				{name: "empty resource", resource: "", fence: 1},
				{name: "zero fence", resource: "r", fence: 0},
				{name: "negative fence", resource: "r", fence: -5},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					tx, err := d.DB.BeginTx(ctx, nil)
					require.NoError(t, err)
					defer tx.Rollback()
					use := tx
					if tt.nilTx {
						use = nil
					}
					err = g.Check(ctx, use, tt.resource, tt.fence)
					assert.ErrorIs(t, err, fencing.ErrInvalid)
					assert.NotErrorIs(t, err, fencing.ErrStale)
					// The transaction is untouched and still usable.
					assert.NoError(t, g.Check(ctx, tx, "bad input/"+tt.name, 1))
				})
			}
		})
	}
}

// TestCheck_OlderWaitsForNewerThenFails runs two transactions of one
// resource at once: the second one's Check must wait until the first ends,
// then decide against what the first committed.
func TestCheck_OlderWaitsForNewerThenFails(t *testing.T) {
	tests := []struct {
		name        string
		first       int64
		firstCommit bool
		second      int64
		stale       int64 // 0: the second must pass
	}{
		{name: "older after newer commits: stale", first: 10, firstCommit: true, second: 9, stale: 10},
		{name: "equal after newer commits: passes", first: 10, firstCommit: true, second: 10},
		{name: "newer after older commits: passes", first: 10, firstCommit: true, second: 11},
		{name: "older after newer rolls back: passes", first: 10, second: 9},
	}
	pg := sqltest.StartPostgres(t)
	for _, d := range sqltest.Both(t, pg) {
		t.Run(d.Name, func(t *testing.T) {
			g := newGuard(t, d)
			ctx := context.Background()
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					res := "wait/" + tt.name
					require.NoError(t, checkIn(t, d, g, res, 5, true))
					tx1, err := d.DB.BeginTx(ctx, nil)
					require.NoError(t, err)
					require.NoError(t, g.Check(ctx, tx1, res, tt.first))

					done := make(chan error, 1)
					go func() {
						tx2, err := d.DB.BeginTx(ctx, nil)
						if err != nil {
							done <- err
							return
						}
						err = g.Check(ctx, tx2, res, tt.second)
						if err == nil {
							err = tx2.Commit()
						} else {
							tx2.Rollback()
						}
						done <- err
					}()
					select {
					case err := <-done:
						t.Fatalf("the second check returned while the first transaction was open: %v", err)
					case <-time.After(300 * time.Millisecond):
					}
					if tt.firstCommit {
						require.NoError(t, tx1.Commit())
					} else {
						require.NoError(t, tx1.Rollback())
					}
					var err2 error
					select {
					case err2 = <-done:
					case <-time.After(15 * time.Second):
						t.Fatal("the second check did not return after the first transaction ended")
					}
					want := max(tt.first, tt.second)
					if !tt.firstCommit {
						want = tt.second
					}
					if tt.stale == 0 {
						assert.NoError(t, err2)
					} else {
						var se *fencing.StaleError
						require.ErrorAs(t, err2, &se)
						assert.Equal(t, fencing.StaleError{Resource: res, Fence: tt.second, Highest: tt.stale}, *se)
					}
					assert.Equal(t, want, highest(t, d, g, res))
				})
			}
		})
	}
}
