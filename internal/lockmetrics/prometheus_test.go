package lockmetrics

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/redlock"
)

// The exposition: HELP and TYPE per family, counters summed per label set,
// a histogram's cumulative buckets in order with its sum and count, the
// gauges per master, escaped label values.
func TestRegistry_WriteText(t *testing.T) {
	r := NewRegistry()
	ctx := context.Background()
	for _, ev := range []redlock.Event{
		{Kind: redlock.KindAttempt, Outcome: redlock.OutcomeObtained, Duration: 700 * time.Microsecond},
		{Kind: redlock.KindAttempt, Outcome: redlock.OutcomeObtained, Duration: 2 * time.Second},
		{Kind: redlock.KindAttempt, Outcome: redlock.OutcomeHeld, Duration: 90 * time.Second},
		{Kind: redlock.KindMaster, Master: `a"1`, State: redlock.MasterDown, Reason: "no reply"},
	} {
		r.Observe(ctx, ev)
	}
	var b strings.Builder
	require.NoError(t, r.WriteText(&b))
	text := b.String()
	for _, want := range []string{
		"# HELP quorumlock_lock_attempts_total Acquisition attempts, by outcome.\n# TYPE quorumlock_lock_attempts_total counter\n" +
			"quorumlock_lock_attempts_total{quorumlock_outcome=\"held\"} 1\nquorumlock_lock_attempts_total{quorumlock_outcome=\"obtained\"} 2\n",
		"# TYPE quorumlock_lock_acquire_duration_seconds histogram\n" +
			"quorumlock_lock_acquire_duration_seconds_bucket{quorumlock_outcome=\"held\",le=\"0.0005\"} 0\n",
		"quorumlock_lock_acquire_duration_seconds_bucket{quorumlock_outcome=\"held\",le=\"60\"} 0\n" +
			"quorumlock_lock_acquire_duration_seconds_bucket{quorumlock_outcome=\"held\",le=\"+Inf\"} 1\n" +
			"quorumlock_lock_acquire_duration_seconds_sum{quorumlock_outcome=\"held\"} 90\n" +
			"quorumlock_lock_acquire_duration_seconds_count{quorumlock_outcome=\"held\"} 1\n",
		"quorumlock_lock_acquire_duration_seconds_bucket{quorumlock_outcome=\"obtained\",le=\"0.0005\"} 0\n" +
			"quorumlock_lock_acquire_duration_seconds_bucket{quorumlock_outcome=\"obtained\",le=\"0.001\"} 1\n",
		"quorumlock_lock_acquire_duration_seconds_bucket{quorumlock_outcome=\"obtained\",le=\"2.5\"} 2\n",
		"# TYPE quorumlock_lock_held gauge\nquorumlock_lock_held 2\n",
		`quorumlock_master_state{quorumlock_master_address="a\"1",quorumlock_master_state="down"} 1`,
		`quorumlock_master_quarantined{quorumlock_master_address="a\"1"} 0`,
		`quorumlock_master_changes_total{quorumlock_master_address="a\"1",quorumlock_master_state="down",quorumlock_master_reason="no reply"} 1`,
	} {
		assert.Contains(t, text, want)
	}
	assert.NotContains(t, text, "quorumlock_lock_losses", "no series for what did not happen")
	assert.Equal(t, map[string]float64{"obtained": 2, "held": 1}, r.Outcomes(Attempts))
	assert.Equal(t, float64(2), r.Count(AcquireDuration, Attr{AttrOutcome, "obtained"}))

	rec := httptest.NewRecorder()
	r.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	assert.Equal(t, text, rec.Body.String())
	assert.Contains(t, rec.Header().Get("Content-Type"), "text/plain; version=0.0.4")
}
