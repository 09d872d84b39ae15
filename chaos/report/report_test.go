package report

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/chaos/history"
)

const ms = time.Millisecond

func TestTable(t *testing.T) {
	out := Table([]Row{
		{Scenario: "01 no-faults", Backend: "process", Ops: 10, Locks: 4, C2: 0, C4: "ok", P50: 500 * time.Microsecond, P99: 12 * ms, Wall: 5 * time.Second, Verdict: "as expected"},
		{Scenario: "04a restart-guard-off", Backend: "docker", Ops: 7, Locks: 3, C1: 1, C2: 0.25, C3Rejected: 2, C3Stale: 1, C4: "ok", Verdict: "as expected"},
	})
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 4)
	for _, l := range lines {
		assert.Equal(t, utf8.RuneCountInString(lines[0]), utf8.RuneCountInString(l), "columns are aligned")
	}
	assert.Contains(t, lines[2], "| 500µs ")
	assert.Contains(t, lines[2], "| 12ms ")
	assert.Contains(t, lines[3], "| 25.0% ")
	assert.Contains(t, lines[3], "| 2/1 ")
}

// TestTimeline_DrawsHoldsFaultsAndOverlaps checks that the picture is
// well-formed XML and carries what a reader looks for.
func TestTimeline_DrawsHoldsFaultsAndOverlaps(t *testing.T) {
	rec := history.Record{
		Holds: []history.Hold{
			{ID: 0, Client: 0, Fence: 7, Acquired: 100 * ms, Until: 2000 * ms, Released: 1500 * ms, Caught: true},
			{ID: 1, Client: 1, Fence: 8, Acquired: 600 * ms, Until: 2600 * ms, Released: 900 * ms},
			{ID: 2, Client: 1, Fence: 9, Acquired: 3000 * ms, Until: 3100 * ms, Released: 3400 * ms},
			{ID: 3, Client: 0, Fence: 10, Acquired: 9000 * ms, Until: 10000 * ms, Released: 9100 * ms},
		},
		Attempts: []history.Attempt{{Client: 1, Start: 50 * ms, End: 60 * ms}},
		Writes:   []history.Write{{Seq: 0, Hold: 0, Client: 0, Fence: 7, At: 1400 * ms}},
		Faults: []history.Fault{
			{ID: 0, Node: 0, Client: history.AllClients, Kind: "killed", Label: "n0 killed", Start: 200 * ms, End: 500 * ms},
			{ID: 1, Node: 0, Client: history.AllClients, Kind: "restarted", Label: "n0 up", Start: 500 * ms, End: 500 * ms},
			{ID: 2, Node: 3, Client: 0, Kind: "rejected", Label: "c0-n3 rejected", Start: 0, End: 3500 * ms},
			{ID: 3, Node: 4, Client: 0, Kind: "rejected", Label: "c0-n4 rejected", Start: 0, End: 3500 * ms},
		},
		Notes: []history.Note{{At: 100 * ms, Text: "client 0 frozen <here>"}},
	}
	var buf bytes.Buffer
	require.NoError(t, Timeline{
		Title: "04a test", Lines: []string{"a line"}, Clients: 2, Nodes: 5, Record: rec,
		Overlaps: [][2]int{{0, 1}},
	}.WriteSVG(&buf))
	svg := buf.String()

	dec := xml.NewDecoder(strings.NewReader(svg))
	for {
		_, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, "the SVG must be well-formed XML")
	}
	for _, want := range []string{
		"fence 7 (frozen)",         // the frozen holder, labelled
		"C1: two holders",          // the overlap
		"n0 killed",                // a master's fault
		"n3,n4 rejected",           // a client's own links, merged
		"write rejected (fence 7)", // a rejected fenced write
		"kept going",               // the overrun past validity
		"zoom on",                  // the zoom panel on the frozen holder
		"&lt;here&gt;",             // notes are escaped
	} {
		assert.Contains(t, svg, want)
	}
}

func TestShownNotes_MergeAlikeMessagesAndKeepTheScenariosOwn(t *testing.T) {
	var notes []history.Note
	for i := range 3 {
		notes = append(notes, history.Note{At: time.Duration(i) * ms, Text: fmt.Sprintf("client 0: redlock: master restarted recently addr=n%d uptime=0s", i)})
	}
	notes = append(notes,
		history.Note{At: 5 * ms, Text: "client 1: redlock: master restarted recently addr=n0 uptime=0s"},
		history.Note{At: 6 * ms, Text: "client 2: redlock: release failed key=k"},
		history.Note{At: 10 * ms, Text: "client 1 cut from n0"},
		history.Note{At: 11 * ms, Text: "client 1: redlock: lock lost key=k fence=7"},
		history.Note{At: 12 * ms, Text: "client 1 saw its ctx cancelled"})
	shown, hidden := shownNotes(notes, 4)
	var texts []string
	for _, n := range shown {
		texts = append(texts, n.Text)
	}
	assert.Equal(t, []string{
		"client 0: redlock: master restarted recently addr=n0 uptime=0s (and 2 alike)",
		"client 1: redlock: master restarted recently addr=n0 uptime=0s",
		"client 1 cut from n0",
		"client 1 saw its ctx cancelled",
	}, texts)
	assert.Equal(t, 2, hidden)
	all, none := shownNotes(notes[5:], 4)
	assert.Len(t, all, 3)
	assert.Zero(t, none)
}
