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

// kindStyle is how a fault of one kind is drawn.
type kindStyle struct {
	color string
	text  string // legend text
}

// style returns how a fault of the given kind is drawn.
func style(kind string) kindStyle {
	switch kind {
	case "killed":
		return kindStyle{"#d64541", "killed (SIGKILL)"}
	case "stopped":
		return kindStyle{"#a93226", "stopped (SIGTERM)"}
	case "paused":
		return kindStyle{"#e67e22", "paused (SIGSTOP)"}
	case "slow":
		return kindStyle{"#f1c40f", "slow replies"}
	case "replies dropped":
		return kindStyle{"#8e44ad", "replies dropped"}
	case "blackholed":
		return kindStyle{"#5d6d7e", "blackholed link"}
	case "rejected":
		return kindStyle{"#95a5a6", "rejecting link"}
	case "clock jump":
		return kindStyle{"#2471a3", "clock jump"}
	case "restarted":
		return kindStyle{"#1e8449", "started again"}
	}
	return kindStyle{"#7f8c8d", kind}
}

// WriteSVG draws the timeline: one lane per master with its faults, one
// row per client with a bar for each time it held the lock (labelled with
// its fence where there is room), faults that hit a whole master as shaded
// bands across the clients, C1 overlaps in red, rejected fenced writes as
// crosses, and the run's notes below. When the run froze a holder or found
// an overlap, a second panel zooms in on that moment.
func (t Timeline) WriteSVG(w io.Writer) error {
	rec := t.Record
	end := t.end()
	notes := rec.Notes
	if len(notes) > 14 {
		notes = notes[:14]
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
	height := legendTop + 60 + 16*len(notes) + 10

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
		p(`<text x="16" y="%d" fill="#555" font-size="11">%s  %s<title>%s</title></text>`+"\n", legendTop+58+16*i, seconds(n.At), esc(text), esc(n.Text))
	}
	p("</svg>\n")
	return b.Flush()
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

// panel is one time window of the timeline, drawn at a height.
type panel struct {
	t        Timeline
	from, to time.Duration
	top      int
	title    string
}

func (pn panel) height() int {
	return pn.titleH() + pn.t.Nodes*nodeRow + gap + pn.t.Clients*clientRow + 36
}

func (pn panel) titleH() int {
	if pn.title == "" {
		return 0
	}
	return 20
}

// x maps a time to a horizontal position, clamped to the panel.
func (pn panel) x(d time.Duration) float64 {
	d = max(pn.from, min(d, pn.to))
	return left + float64(plotW)*float64(d-pn.from)/float64(pn.to-pn.from)
}

// visible reports whether [a, b] meets the panel's window.
func (pn panel) visible(a, b time.Duration) bool { return b >= pn.from && a <= pn.to }

func (pn panel) draw(p func(string, ...any)) {
	t, rec, x := pn.t, pn.t.Record, pn.x
	if pn.title != "" {
		p(`<text x="16" y="%d" font-size="14" font-weight="bold" fill="#333">%s</text>`+"\n", pn.top+14, esc(pn.title))
	}
	nodesTop := pn.top + pn.titleH()
	clientsTop := nodesTop + t.Nodes*nodeRow + gap
	plotBottom := clientsTop + t.Clients*clientRow

	// Time grid.
	step := tickStep(pn.to - pn.from)
	for d := pn.from.Truncate(step); d <= pn.to; d += step {
		if d < pn.from {
			continue
		}
		p(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#eee"/>`+"\n", x(d), nodesTop, x(d), plotBottom)
		p(`<text x="%.1f" y="%d" fill="#666" text-anchor="middle">%s</text>`+"\n", x(d), plotBottom+16, seconds(d))
	}
	p(`<text x="%d" y="%d" fill="#666" text-anchor="end">time since start</text>`+"\n", width-right, plotBottom+32)

	// Master lanes and their faults.
	for n := range t.Nodes {
		y := nodesTop + n*nodeRow
		p(`<text x="%d" y="%d" fill="#333">master n%d</text>`+"\n", 16, y+13, n)
		p(`<rect x="%d" y="%d" width="%d" height="%d" fill="#f4f6f6"/>`+"\n", left, y+2, plotW, nodeRow-4)
	}
	for _, f := range rec.Faults {
		if f.Client != history.AllClients || f.Node < 0 || f.Node >= t.Nodes {
			continue
		}
		s := style(f.Kind)
		y := nodesTop + f.Node*nodeRow
		fEnd := f.End
		if f.Open() {
			fEnd = pn.to
		}
		if !pn.visible(f.Start, fEnd) {
			continue
		}
		if fEnd == f.Start { // an instant: a marker across the lane and the clients
			p(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-width="2" stroke-dasharray="4 3"><title>%s at %s</title></line>`+"\n",
				x(f.Start), y, x(f.Start), plotBottom, s.color, esc(f.Label), seconds(f.Start))
			p(`<text x="%.1f" y="%d" fill="%s" font-size="11">%s</text>`+"\n", x(f.Start)+3, y+13, s.color, esc(f.Label))
			continue
		}
		w := max(x(fEnd)-x(f.Start), 1)
		p(`<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"><title>%s, %s to %s</title></rect>`+"\n",
			x(f.Start), y+2, w, nodeRow-4, s.color, esc(f.Label), seconds(f.Start), seconds(fEnd))
		p(`<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s" opacity="0.10"/>`+"\n",
			x(f.Start), clientsTop, w, plotBottom-clientsTop, s.color)
		if w > float64(7*len(f.Label)) {
			p(`<text x="%.1f" y="%d" fill="white" font-size="11">%s</text>`+"\n", x(f.Start)+4, y+13, esc(f.Label))
		}
	}

	// Client rows and their own link faults.
	for c := range t.Clients {
		y := clientsTop + c*clientRow
		p(`<text x="%d" y="%d" fill="#333">client %d</text>`+"\n", 16, y+18, c)
		p(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#ddd"/>`+"\n", left, y+clientRow, width-right, y+clientRow)
	}
	for _, band := range linkBands(rec.Faults, t.Clients) {
		if !pn.visible(band.start, band.end) {
			continue
		}
		s := style(band.kind)
		y := clientsTop + band.client*clientRow
		w := max(x(band.end)-x(band.start), 1)
		label := fmt.Sprintf("%s %s", strings.Join(band.nodes, ","), band.kind)
		p(`<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s" opacity="0.22"><title>client %d: %s, %s to %s</title></rect>`+"\n",
			x(band.start), y+1, w, clientRow-2, s.color, band.client, esc(label), seconds(band.start), seconds(band.end))
		if w > float64(6*len(label)) {
			p(`<text x="%.1f" y="%d" fill="#555" font-size="10">%s</text>`+"\n", x(band.start)+3, y+clientRow-3, esc(label))
		}
	}

	// Failed attempts: faint ticks at the bottom of the row.
	for _, a := range rec.Attempts {
		if a.OK || a.Client < 0 || a.Client >= t.Clients || !pn.visible(a.End, a.End) {
			continue
		}
		y := clientsTop + a.Client*clientRow
		p(`<rect x="%.1f" y="%d" width="1" height="4" fill="#999" opacity="0.5"/>`+"\n", x(a.End), y+clientRow-5)
	}

	// C1 overlaps: a red band across every client over each stretch of
	// time with two holders, and one label.
	overlapping := map[int]bool{}
	var spans [][2]time.Duration
	for _, o := range t.Overlaps {
		overlapping[o[0]], overlapping[o[1]] = true, true
		a, bb := holdByID(rec.Holds, o[0]), holdByID(rec.Holds, o[1])
		spans = append(spans, [2]time.Duration{max(a.Acquired, bb.Acquired), min(a.End(), bb.End())})
	}
	labelled := false
	for _, sp := range union(spans) {
		if !pn.visible(sp[0], sp[1]) {
			continue
		}
		p(`<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="#e74c3c" opacity="0.25"><title>C1: two holders from %s to %s</title></rect>`+"\n",
			x(sp[0]), clientsTop, max(x(sp[1])-x(sp[0]), 2), plotBottom-clientsTop, seconds(sp[0]), seconds(sp[1]))
		if !labelled {
			p(`<text x="%.1f" y="%d" fill="#c0392b" font-weight="bold">C1: two holders at once (%d overlapping pairs)</text>`+"\n", x(sp[0])+3, clientsTop-3, len(t.Overlaps))
			labelled = true
		}
	}

	// Holds.
	for _, h := range rec.Holds {
		if h.Client < 0 || h.Client >= t.Clients || !pn.visible(h.Acquired, max(h.End(), h.Released)) {
			continue
		}
		y := clientsTop + h.Client*clientRow
		x0, x1 := x(h.Acquired), x(h.End())
		fill, what := "#2e86c1", "held"
		if h.Caught {
			fill, what = "#f39c12", "frozen holder"
		}
		stroke := ""
		if overlapping[h.ID] {
			stroke = ` stroke="#c0392b" stroke-width="2"`
		}
		p(`<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"%s><title>client %d %s fence %d, %s to %s</title></rect>`+"\n",
			x0, y+5, max(x1-x0, 1.5), clientRow-12, fill, stroke, h.Client, what, h.Fence, seconds(h.Acquired), seconds(h.End()))
		if h.Released > h.Until {
			p(`<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="url(#overrun)"><title>client %d kept going %s past its validity</title></rect>`+"\n",
				x(h.Until), y+5, max(x(h.Released)-x(h.Until), 1.5), clientRow-12, h.Client, seconds(h.Released-h.Until))
		}
		label := fmt.Sprintf("fence %d", h.Fence)
		if h.Caught {
			label += " (frozen)"
		}
		switch {
		case x1-x0 > float64(7*len(label)):
			p(`<text x="%.1f" y="%d" fill="white" font-size="11">%s</text>`+"\n", x0+3, y+18, esc(label))
		case x1-x0 > float64(7*len(fmt.Sprint(h.Fence))):
			p(`<text x="%.1f" y="%d" fill="white" font-size="10">%d</text>`+"\n", x0+2, y+18, h.Fence)
		}
	}

	// Rejected fenced writes.
	for _, wr := range rec.Writes {
		if wr.Accepted || wr.Client < 0 || wr.Client >= t.Clients || !pn.visible(wr.At, wr.At) {
			continue
		}
		y := clientsTop + wr.Client*clientRow + clientRow/2
		p(`<text x="%.1f" y="%d" fill="#c0392b" font-size="16" font-weight="bold" text-anchor="middle">✕<title>fenced write with fence %d rejected</title></text>`+"\n", x(wr.At), y+6, wr.Fence)
		p(`<text x="%.1f" y="%d" fill="#c0392b" font-size="10">write rejected (fence %d)</text>`+"\n", x(wr.At)+8, y-4, wr.Fence)
	}
}

// legend draws what each colour means.
func (t Timeline) legend(p func(string, ...any), y int) {
	items := []struct{ color, text, extra string }{
		{"#2e86c1", "held the lock (fence inside when it fits)", ""},
		{"#f39c12", "holder frozen by the scenario", ""},
		{"url(#overrun)", "kept going past its validity", ""},
		{"#e74c3c", "C1: two holders at once", ` opacity="0.4"`},
	}
	seen := map[string]bool{}
	for _, f := range t.Record.Faults {
		seen[f.Kind] = true
	}
	var ks []string
	for k := range seen {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	for _, k := range ks {
		s := style(k)
		items = append(items, struct{ color, text, extra string }{s.color, s.text, ""})
	}
	xPos, row := 16, 0
	for _, it := range items {
		wd := 24 + 7*len(it.text)
		if xPos+wd > width-right {
			xPos, row = 16, row+1
		}
		yy := y + 20*row
		p(`<rect x="%d" y="%d" width="14" height="12" fill="%s"%s/>`+"\n", xPos, yy, it.color, it.extra)
		p(`<text x="%d" y="%d" fill="#333" font-size="11">%s</text>`+"\n", xPos+18, yy+10, esc(it.text))
		xPos += wd
	}
	yy := y + 20*(row+1)
	p(`<text x="16" y="%d" fill="#c0392b" font-size="14" font-weight="bold">✕</text><text x="32" y="%d" fill="#333" font-size="11">fenced write rejected</text>`+"\n", yy+11, yy+10)
	p(`<rect x="180" y="%d" width="1" height="8" fill="#999"/><text x="188" y="%d" fill="#333" font-size="11">failed attempt</text>`+"\n", yy+2, yy+10)
	p(`<text x="300" y="%d" fill="#333" font-size="11">shaded bands across the clients: a fault on a whole master; light bands in a row: that client's own links</text>`+"\n", yy+10)
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
		b.nodes = append(b.nodes, fmt.Sprintf("n%d", f.Node))
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
