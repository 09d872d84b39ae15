package scenario

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/chaos/history"
	"github.com/quorumlock/quorumlock/chaos/workload"
	"github.com/quorumlock/quorumlock/fencing/sqltest"
)

// TestStoreAgrees_FiresWhenTheHistoryIsNotTheDatabases feeds the cross-check
// of the history against the database's log histories that differ from
// what the database committed.
func TestStoreAgrees_FiresWhenTheHistoryIsNotTheDatabases(t *testing.T) {
	ctx := context.Background()
	h := history.New()
	d := sqltest.SQLite(t)
	store, err := workload.NewFenced(ctx, h, d.DB, d.Dialect)
	require.NoError(t, err)
	require.True(t, store.Write("r", 0, 0, 5))
	require.True(t, store.Write("r", 1, 1, 7))
	require.False(t, store.Write("r", 2, 0, 6))
	writes := h.Snapshot().Writes
	assert.Empty(t, storeAgrees(ctx, store, writes), "the history as recorded")

	accept := func(i int) []history.Write {
		ws := append([]history.Write(nil), writes...)
		ws[i].Accepted = true
		return ws
	}
	tests := map[string][]history.Write{
		"a refused write listed as accepted": accept(2),
		"an accepted write missing":          writes[1:],
		"accepted writes swapped":            {writes[1], writes[0], writes[2]},
	}
	for name, ws := range tests {
		assert.NotEmpty(t, storeAgrees(ctx, store, ws), name)
	}

	// Writes to another key: the database may commit them in any order
	// with the first key's, never out of order within a key.
	require.True(t, store.Write("s", 3, 2, 1))
	require.True(t, store.Write("s", 4, 3, 2))
	writes = h.Snapshot().Writes
	assert.Empty(t, storeAgrees(ctx, store, writes), "the history as recorded")
	assert.Empty(t, storeAgrees(ctx, store, []history.Write{writes[3], writes[0], writes[4], writes[1], writes[2]}),
		"the keys' writes interleaved otherwise")
	assert.NotEmpty(t, storeAgrees(ctx, store, []history.Write{writes[0], writes[1], writes[2], writes[4], writes[3]}),
		"one key's writes swapped")
	assert.NotEmpty(t, storeAgrees(ctx, store, writes[:4]), "one key's write missing")
}
