package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/quorumlock/quorumlock/chaos/history"
)

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
		label := strings.TrimSpace(fmt.Sprintf("%s %s", strings.Join(band.nodes, ","), band.kind))
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
		switch {
		case h.Caught:
			fill, what = "#f39c12", "frozen holder"
		case h.ByDo && h.Lost:
			what = "held under Do until told of its loss;"
		case h.ByDo:
			what = "held under Do"
		}
		stroke := ""
		if overlapping[h.ID] {
			stroke = ` stroke="#c0392b" stroke-width="2"`
		}
		p(`<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"%s><title>client %d %s fence %d, %s to %s</title></rect>`+"\n",
			x0, y+5, max(x1-x0, 1.5), clientRow-12, fill, stroke, h.Client, what, h.Fence, seconds(h.Acquired), seconds(h.End()))
		if h.Released > h.Until {
			past := "its validity"
			if h.ByDo {
				past = "the notice of its loss"
			}
			p(`<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="url(#overrun)"><title>client %d kept going %s past %s</title></rect>`+"\n",
				x(h.Until), y+5, max(x(h.Released)-x(h.Until), 1.5), clientRow-12, h.Client, seconds(h.Released-h.Until), past)
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
