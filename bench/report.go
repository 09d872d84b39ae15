package bench

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Round is one round of every scenario: metric values keyed by
// "row/metric", e.g. "seq-distinct/quorumlock/p50_us".
type Round map[string]float64

// Series returns a metric's value in each round that has it.
func Series(rounds []Round, key string) []float64 {
	var xs []float64
	for _, r := range rounds {
		if v, ok := r[key]; ok && !math.IsNaN(v) {
			xs = append(xs, v)
		}
	}
	return xs
}

// Spread is the median and range of a metric over rounds.
type Spread struct {
	Median, Min, Max float64
	N                int
}

// Summarise returns the median and range of xs.
func Summarise(xs []float64) Spread {
	if len(xs) == 0 {
		return Spread{Median: math.NaN(), Min: math.NaN(), Max: math.NaN()}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Spread{Median: m, Min: s[0], Max: s[len(s)-1], N: len(s)}
}

// Format renders the spread as "median (min–max)" with the given verb, or
// "n/a" when no round measured it.
func (s Spread) Format(verb string) string {
	if s.N == 0 {
		return "n/a"
	}
	m := fmt.Sprintf(verb, s.Median)
	if s.N == 1 {
		return m
	}
	return fmt.Sprintf("%s (%s–%s)", m, fmt.Sprintf(verb, s.Min), fmt.Sprintf(verb, s.Max))
}

// Column is one metric of a table.
type Column struct {
	Title  string
	Metric string
	Verb   string // fmt verb for one value, e.g. "%.0f"
}

// Row is one contender in one scenario: Key prefixes the metrics.
type Row struct {
	Title string
	Key   string
}

// Table is rows by metrics, each cell the median and range over rounds.
type Table struct {
	Title   string
	Rows    []Row
	Columns []Column
}

// Markdown renders the table.
func (t Table) Markdown(rounds []Round) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n| |", t.Title)
	for _, c := range t.Columns {
		fmt.Fprintf(&b, " %s |", c.Title)
	}
	b.WriteString("\n|---|")
	for range t.Columns {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, r := range t.Rows {
		fmt.Fprintf(&b, "| %s |", r.Title)
		for _, c := range t.Columns {
			fmt.Fprintf(&b, " %s |", Summarise(Series(rounds, r.Key+"/"+c.Metric)).Format(c.Verb))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// Target is a goal on a same-round ratio or value: Value(round) must be at
// most (or, with AtLeast, at least) Limit.
type Target struct {
	Title   string
	Value   func(Round) (float64, bool)
	Limit   float64
	AtLeast bool
	Verb    string
}

func (t Target) met(v float64) bool {
	if t.AtLeast {
		return v >= t.Limit
	}
	return v <= t.Limit
}

// Ratio returns a Target value: metric a over metric b in the same round.
func Ratio(a, b string) func(Round) (float64, bool) {
	return func(r Round) (float64, bool) {
		x, okA := r[a]
		y, okB := r[b]
		if !okA || !okB || y == 0 {
			return 0, false
		}
		return x / y, true
	}
}

// Value returns a Target value: one metric.
func Value(a string) func(Round) (float64, bool) {
	return func(r Round) (float64, bool) {
		x, ok := r[a]
		return x, ok
	}
}

// TargetsMarkdown renders each target with its median and range over the
// rounds, how many rounds met it, and the verdict on the median.
func TargetsMarkdown(title string, targets []Target, rounds []Round) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n| target | limit | median (min–max) | rounds met | verdict |\n|---|---|---|---|---|\n", title)
	for _, t := range targets {
		var xs []float64
		met := 0
		for _, r := range rounds {
			if v, ok := t.Value(r); ok {
				xs = append(xs, v)
				if t.met(v) {
					met++
				}
			}
		}
		s := Summarise(xs)
		op := "≤"
		if t.AtLeast {
			op = "≥"
		}
		verdict := "–"
		if s.N > 0 {
			verdict = "missed"
			if t.met(s.Median) {
				verdict = "met"
			}
		}
		fmt.Fprintf(&b, "| %s | %s %s | %s | %d of %d | %s |\n",
			t.Title, op, fmt.Sprintf(t.Verb, t.Limit), s.Format(t.Verb), met, s.N, verdict)
	}
	return b.String()
}
