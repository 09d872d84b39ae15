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
