package bench

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSummarise_MedianAndRange(t *testing.T) {
	s := Summarise([]float64{3, 1, 2})
	assert.Equal(t, Spread{Median: 2, Min: 1, Max: 3, N: 3}, s)
	assert.Equal(t, 2.5, Summarise([]float64{4, 1, 2, 3}).Median)
	assert.True(t, math.IsNaN(Summarise(nil).Median))
	assert.Equal(t, "2.0 (1.0–3.0)", s.Format("%.1f"))
	assert.Equal(t, "n/a", Summarise(nil).Format("%.1f"), "nothing measured")
}

func TestTable_Markdown_OneCellPerRowAndMetric(t *testing.T) {
	rounds := []Round{{"a/x": 1, "b/x": 10}, {"a/x": 3, "b/x": 30}, {"a/x": 2}}
	got := Table{
		Title:   "T",
		Rows:    []Row{{"A", "a"}, {"B", "b"}},
		Columns: []Column{{"x", "x", "%.0f"}},
	}.Markdown(rounds)
	assert.Contains(t, got, "| A | 2 (1–3) |")
	assert.Contains(t, got, "| B | 20 (10–30) |")
}

func TestTargetsMarkdown_VerdictOnMedianAndRoundsMet(t *testing.T) {
	rounds := []Round{{"q": 1.0, "f": 1.0}, {"q": 1.2, "f": 1.0}, {"q": 1.05, "f": 1.0}}
	got := TargetsMarkdown("T", []Target{
		{Title: "ratio", Value: Ratio("q", "f"), Limit: 1.1, Verb: "%.2f"},
		{Title: "floor", Value: Value("f"), Limit: 2, AtLeast: true, Verb: "%.1f"},
		{Title: "absent", Value: Value("nope"), Limit: 1, Verb: "%.1f"},
	}, rounds)
	lines := strings.Split(got, "\n")
	assert.Contains(t, lines[4], "| ratio | ≤ 1.10 | 1.05 (1.00–1.20) | 2 of 3 | met |")
	assert.Contains(t, lines[5], "| floor | ≥ 2.0 | 1.0 (1.0–1.0) | 0 of 3 | missed |")
	assert.Contains(t, lines[6], "| absent | ≤ 1.0 | n/a | 0 of 0 | – |")
}

// The contention table has a row for each client library's 8 separate
// clients and its redsync, and the targets compare them within a round.
func TestReportTables_ContentionPerClientLibrary(t *testing.T) {
	round := Round{}
	for _, lib := range []string{"goredis", "rueidis"} {
		round["contend/quorumlock-"+lib+"-8clients/locks_s"] = 3000
		round["contend/quorumlock-"+lib+"-8clients/attempts_lock"] = 1.1
		round["contend/quorumlock-"+lib+"-8clients/max_share_pct"] = 20
		round["contend/quorumlock-"+lib+"-8clients/max_wait_ms"] = 10
		round["contend/redsync-"+lib+"/locks_s"] = 1000
	}
	got := reportTables([]Round{round, round})
	for _, lib := range []string{"goredis", "rueidis"} {
		name := "quorumlock-" + lib + "-8clients"
		assert.Contains(t, got, "| "+name+" | 3000 (3000–3000) |")
		assert.Contains(t, got, "| redsync-"+lib+" | 1000 (1000–1000) |")
		assert.Contains(t, got, "| "+name+": locks/s / redsync-"+lib+"'s | ≥ 1.50 | 3.00 (3.00–3.00) | 2 of 2 | met |")
		assert.Contains(t, got, "| "+name+": attempts per lock | ≤ 1.20 | 1.10 (1.10–1.10) | 2 of 2 | met |")
		assert.Contains(t, got, "| "+name+": max share % | ≤ 15.0 | 20.0 (20.0–20.0) | 0 of 2 | missed |")
		assert.Contains(t, got, "| "+name+": longest wait ms | ≤ 50 | 10 (10–10) | 2 of 2 | met |")
	}
}
