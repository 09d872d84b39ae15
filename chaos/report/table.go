package report

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Row is one line of the report table: one scenario on one backend.
type Row struct {
	Scenario string // "04a restart-guard-off"
	Backend  string
	Ops      int // acquisition attempts
	Locks    int // attempts that got the lock
	// C1 is the number of overlapping holds.
	C1 int
	// C2 is the lost share of acknowledged elements, in [0, 1].
	C2 float64
	// C3Rejected and C3Stale are the fenced writes rejected, and the stale
	// writes accepted.
	C3Rejected, C3Stale int
	// C4 is "ok" or what failed.
	C4       string
	P50, P99 time.Duration
	Wall     time.Duration
	// Verdict is "as expected" or "UNEXPECTED".
	Verdict string
}

// Table renders rows as a Markdown table, aligned for a terminal too.
func Table(rows []Row) string {
	head := []string{"scenario", "backend", "ops", "locks", "C1 overlaps", "C2 lost", "C3 rejected/stale", "C4", "p50", "p99", "wall", "outcome"}
	cells := [][]string{head}
	for _, r := range rows {
		cells = append(cells, []string{
			r.Scenario, r.Backend,
			fmt.Sprint(r.Ops), fmt.Sprint(r.Locks),
			fmt.Sprint(r.C1),
			fmt.Sprintf("%.1f%%", 100*r.C2),
			fmt.Sprintf("%d/%d", r.C3Rejected, r.C3Stale),
			r.C4,
			duration(r.P50), duration(r.P99), duration(r.Wall),
			r.Verdict,
		})
	}
	width := make([]int, len(head))
	for _, row := range cells {
		for i, c := range row {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	line := func(row []string) {
		b.WriteString("|")
		for i, c := range row {
			fmt.Fprintf(&b, " %-*s |", width[i], c)
		}
		b.WriteString("\n")
	}
	line(cells[0])
	b.WriteString("|")
	for _, w := range width {
		b.WriteString(strings.Repeat("-", w+2) + "|")
	}
	b.WriteString("\n")
	for _, row := range cells[1:] {
		line(row)
	}
	return b.String()
}

// duration renders d with a precision that suits its size.
func duration(d time.Duration) string {
	switch {
	case d <= 0:
		return "-"
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	}
	return fmt.Sprintf("%.1fs", d.Seconds())
}
