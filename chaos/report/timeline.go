package report

import (
	"bufio"
	"cmp"
	"fmt"
	"html"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/quorumlock/quorumlock/chaos/history"
)

// Timeline is one run drawn as a picture.
type Timeline struct {
	Title   string   // e.g. "04a restart-guard-off · docker · as expected"
	Lines   []string // lines under the title: what the run shows, its outcome
	Pass    bool     // colours the title
	Clients int
	Nodes   int
	Record  history.Record
	// Overlaps are the pairs of hold IDs that checker C1 found overlapping.
	Overlaps [][2]int
}

// Geometry of the picture, in pixels.
const (
	width     = 1400
	left      = 110 // the label column
	right     = 24
	plotW     = width - left - right
	nodeRow   = 18
	clientRow = 28
	gap       = 14
)

// WriteSVG draws the timeline: one lane per master with its faults, one
// row per client with a bar for each time it held the lock (labelled with
// its fence where there is room), faults that hit a whole master as shaded
// bands across the clients, C1 overlaps in red, rejected fenced writes as
// crosses, and the run's notes below. When the run froze a holder or found
// an overlap, a second panel zooms in on that moment.
func (t Timeline) WriteSVG(w io.Writer) error {
	rec := t.Record
	end := t.end()
	notes, hidden := shownNotes(rec.Notes, maxNotes)
	if hidden > 0 {
		notes = append(notes, history.Note{At: end, Text: fmt.Sprintf("(%d more notes not shown)", hidden)})
	}
	top := 16 + 20*(1+len(t.Lines)) + 8
	full := panel{t: t, from: 0, to: end, top: top}
	panels := []panel{full}
	if from, to, ok := t.focus(); ok {
		panels = append(panels, panel{t: t, from: from, to: to, top: top + full.height() + 30,
			title: fmt.Sprintf("zoom on %s to %s", seconds(from), seconds(to))})
	}
	last := panels[len(panels)-1]
	legendTop := last.top + last.height() + 20
	notesTop := legendTop + t.legend(func(string, ...any) {}, legendTop) + 18
	height := notesTop + 16*len(notes) + 12

	b := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif" font-size="12">`+"\n", width, height, width, height)
	p(`<defs><pattern id="overrun" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="3" height="6" fill="#d64541" opacity="0.6"/></pattern></defs>` + "\n")
	p(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	titleColor := "#1e8449"
	if !t.Pass {
		titleColor = "#c0392b"
	}
	p(`<text x="16" y="24" font-size="17" font-weight="bold" fill="%s">%s</text>`+"\n", titleColor, esc(t.Title))
	for i, l := range t.Lines {
		p(`<text x="16" y="%d" fill="#333">%s</text>`+"\n", 24+20*(i+1), esc(l))
	}
	for _, pn := range panels {
		pn.draw(p)
	}
	t.legend(p, legendTop)
	for i, n := range notes {
		text := n.Text
		if r := []rune(text); len(r) > 220 {
			text = string(r[:220]) + "…"
		}
		p(`<text x="16" y="%d" fill="#555" font-size="11">%s  %s<title>%s</title></text>`+"\n", notesTop+16*i, seconds(n.At), esc(text), esc(n.Text))
	}
	p("</svg>\n")
	return b.Flush()
}

// maxNotes is how many notes a picture shows at most.
const maxNotes = 14

// shownNotes returns at most limit notes, in time order, and how many it
// left out. A run of the library's messages (notes with "redlock: " after
// the client) that say the same thing about different masters, as a
// restart makes every client say about every master, is shown once. Then
// the scenario's own notes go first, and the library's messages fill the
// room that is left.
func shownNotes(notes []history.Note, limit int) ([]history.Note, int) {
	library := func(n history.Note) bool { return strings.Contains(n.Text, ": redlock: ") }
	var merged []history.Note
	alike := 0
	for _, n := range notes {
		if k := len(merged) - 1; k >= 0 && library(n) && library(merged[k]) && gist(n.Text) == gist(merged[k].Text) {
			alike++
			continue
		}
		if alike > 0 {
			merged[len(merged)-1].Text += fmt.Sprintf(" (and %d alike)", alike)
			alike = 0
		}
		merged = append(merged, n)
	}
	if alike > 0 {
		merged[len(merged)-1].Text += fmt.Sprintf(" (and %d alike)", alike)
	}
	room, hidden := limit, 0
	for _, n := range merged {
		if !library(n) {
			room--
		}
	}
	var out []history.Note
	for _, n := range merged {
		switch {
		case len(out) == limit:
			hidden++
		case !library(n):
			out = append(out, n)
		case room > 0:
			out = append(out, n)
			room--
		default:
			hidden++
		}
	}
	return out, hidden
}

// gist is a library message without its attributes (" key=value" pairs).
func gist(text string) string {
	for i := 0; i < len(text); i++ {
		if text[i] != ' ' {
			continue
		}
		j := i + 1
		for j < len(text) && (text[j] == '_' || text[j] >= 'a' && text[j] <= 'z') {
			j++
		}
		if j > i+1 && j < len(text) && text[j] == '=' {
			return text[:i]
		}
	}
	return text
}

// focus returns the window around the frozen holders and the C1 overlaps,
// if the run has any and they are small in the whole picture.
func (t Timeline) focus() (from, to time.Duration, ok bool) {
	var ids []int
	for _, h := range t.Record.Holds {
		if h.Caught {
			ids = append(ids, h.ID)
		}
	}
	for _, o := range t.Overlaps {
		ids = append(ids, o[0], o[1])
	}
	if len(ids) == 0 {
		return 0, 0, false
	}
	from, to = time.Duration(1<<62), 0
	for _, id := range ids {
		h := holdByID(t.Record.Holds, id)
		from, to = min(from, h.Acquired), max(to, h.End(), h.Released)
	}
	pad := max((to-from)/4, 100*time.Millisecond)
	from, to = max(0, from-pad), min(t.end(), to+pad)
	return from, to, to-from < t.end()/2
}

// end returns the time the picture ends at.
func (t Timeline) end() time.Duration {
	var e time.Duration
	for _, a := range t.Record.Attempts {
		e = max(e, a.End)
	}
	for _, h := range t.Record.Holds {
		e = max(e, h.End(), h.Released)
	}
	for _, f := range t.Record.Faults {
		e = max(e, f.Start, f.End)
	}
	if e <= 0 {
		return time.Second
	}
	return e + e/50
}

// linkBand is one fault on one client's links, possibly to several masters
// at once.
type linkBand struct {
	client     int
	kind       string
	start, end time.Duration
	nodes      []string
}

// linkBands merges the client-level faults that share client, kind and
// time into one band each.
func linkBands(faults []history.Fault, clients int) []linkBand {
	type k struct {
		client     int
		kind       string
		start, end time.Duration
	}
	var end time.Duration
	for _, f := range faults {
		end = max(end, f.Start, f.End)
	}
	m := map[k]*linkBand{}
	var order []k
	for _, f := range faults {
		if f.Client < 0 || f.Client >= clients {
			continue
		}
		fe := f.End
		if f.Open() {
			fe = end
		}
		// Faults set together differ by microseconds: round to group them.
		key := k{f.Client, f.Kind, f.Start.Round(50 * time.Millisecond), fe.Round(50 * time.Millisecond)}
		b, ok := m[key]
		if !ok {
			b = &linkBand{client: f.Client, kind: f.Kind, start: f.Start, end: fe}
			m[key] = b
			order = append(order, key)
		}
		if f.Node >= 0 { // a fault of the client itself names no master
			b.nodes = append(b.nodes, fmt.Sprintf("n%d", f.Node))
		}
		b.start, b.end = min(b.start, f.Start), max(b.end, fe)
	}
	out := make([]linkBand, 0, len(order))
	for _, key := range order {
		out = append(out, *m[key])
	}
	slices.SortStableFunc(out, func(a, b linkBand) int { return cmp.Compare(a.start, b.start) })
	return out
}

// union merges intervals that touch or overlap.
func union(spans [][2]time.Duration) [][2]time.Duration {
	slices.SortFunc(spans, func(a, b [2]time.Duration) int { return cmp.Compare(a[0], b[0]) })
	var out [][2]time.Duration
	for _, s := range spans {
		if n := len(out); n > 0 && s[0] <= out[n-1][1] {
			out[n-1][1] = max(out[n-1][1], s[1])
			continue
		}
		out = append(out, s)
	}
	return out
}

func holdByID(hs []history.Hold, id int) history.Hold {
	if id >= 0 && id < len(hs) && hs[id].ID == id {
		return hs[id]
	}
	for _, h := range hs {
		if h.ID == id {
			return h
		}
	}
	return history.Hold{}
}

// tickStep picks a grid step that gives 5 to 20 ticks.
func tickStep(end time.Duration) time.Duration {
	for _, s := range []time.Duration{100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second} {
		if end/s <= 20 {
			return s
		}
	}
	return 30 * time.Second
}

func seconds(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return fmt.Sprintf("%.2fs", d.Seconds())
}

func esc(s string) string { return html.EscapeString(s) }
