package scenario

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/quorumlock/quorumlock/chaos/report"
)

// TimelineFile returns the file name of a run's timeline.
func (r *Result) TimelineFile() string {
	return r.Backend + "-" + r.Scenario.ID + "-" + r.Scenario.Name + ".svg"
}

// writeDump writes the whole record of a run that went otherwise than
// expected, next to its timeline.
func writeDump(dir string, r *Result) error {
	f, err := os.Create(filepath.Join(dir, strings.TrimSuffix(r.TimelineFile(), ".svg")+".txt"))
	if err != nil {
		return err
	}
	if err := report.Dump(f, r.Record); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// timelineMost is the most attempts a timeline draws: the minutes of a
// soak would make a picture of tens of megabytes.
const timelineMost = 50000

// writeTimeline draws the run into dir, unless it made more than
// timelineMost attempts.
func writeTimeline(dir string, r *Result) error {
	if n := len(r.Record.Attempts); n > timelineMost {
		fmt.Printf("chaos [%s] %s: no timeline: %d attempts, more than the %d one draws\n", r.Backend, r.Scenario.Title(), n, timelineMost)
		return nil
	}
	row := r.Row()
	t := report.Timeline{
		Title: fmt.Sprintf("%s · %s backend · %s", r.Scenario.Title(), r.Backend, row.Verdict),
		Lines: []string{
			r.Scenario.Shows + ".",
			"Expected: " + r.Scenario.Expected + ".",
			fmt.Sprintf("Outcome: C1 %d overlaps · C2 %.1f%% lost · C3 %d rejected / %d stale accepted by %s · C4 %s · %d attempts, %d locks, p50 %s, p99 %s",
				row.C1, 100*row.C2, row.C3Rejected, row.C3Stale, r.storeName(), row.C4, row.Ops, row.Locks, shortDuration(row.P50), shortDuration(row.P99)),
		},
		Pass:    r.Pass(),
		Clients: r.Scenario.Clients,
		Nodes:   r.Scenario.Nodes,
		Record:  r.Record,
	}
	if r.C5 != nil {
		t.Lines = append(t.Lines, w5Summary(*r.C5))
	}
	for _, p := range r.Problems {
		t.Lines = append(t.Lines, "Problem: "+p)
	}
	for _, v := range r.C1 {
		t.Overlaps = append(t.Overlaps, [2]int{v.First.ID, v.Second.ID})
	}
	f, err := os.Create(filepath.Join(dir, r.TimelineFile()))
	if err != nil {
		return err
	}
	if err := t.WriteSVG(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
