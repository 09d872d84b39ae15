package lockmetrics

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The catalogue lists each ID once, at its index, with a dotted name, a
// UCUM unit and bounded attributes: never a lock's key.
func TestCatalogue_EveryInstrumentOnceAtItsID(t *testing.T) {
	cat := Catalogue()
	require.Len(t, cat, int(count))
	dotted := regexp.MustCompile(`^quorumlock(\.[a-z]+)+$`)
	names := map[string]bool{}
	for i, in := range cat {
		assert.Equal(t, ID(i), in.ID, "%s sits at its ID", in.Name)
		assert.Regexp(t, dotted, in.Name)
		assert.False(t, names[in.Name], "%s listed twice", in.Name)
		names[in.Name] = true
		assert.Regexp(t, `^(s|\{[a-z]+\})$`, in.Unit, in.Name)
		assert.NotEmpty(t, in.Description, in.Name)
		assert.NotContains(t, in.Attrs, "quorumlock.key", in.Name)
		if in.Kind == Histogram {
			assert.Equal(t, "s", in.Unit, "%s: a duration, in seconds", in.Name)
		}
	}
}

func TestInstrument_PrometheusName(t *testing.T) {
	cat := Catalogue()
	for _, tc := range []struct {
		id   ID
		want string
	}{
		{Attempts, "quorumlock_lock_attempts_total"},
		{AcquireDuration, "quorumlock_lock_acquire_duration_seconds"},
		{Held, "quorumlock_lock_held"},
		{Losses, "quorumlock_lock_losses_total"},
		{MasterState, "quorumlock_master_state"},
		{FenceRaises, "quorumlock_fence_raises_total"},
	} {
		assert.Equal(t, tc.want, cat[tc.id].PrometheusName())
	}
}
