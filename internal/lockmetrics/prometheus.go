package lockmetrics

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/quorumlock/quorumlock/redlock"
)

// Registry is a redlock.Observer that keeps the catalogue's metrics and
// writes them as a Prometheus text exposition, with the names and labels
// the OpenTelemetry Prometheus exporter gives the same instruments. It is
// safe for concurrent use.
type Registry struct {
	masters Masters
	now     func() time.Time
	cat     []Instrument
	buckets []float64

	mu     sync.Mutex
	series [count]map[string]*point // by instrument, then by labels
}

// point is one series: a sum, or a histogram's buckets.
type point struct {
	labels string
	value  float64  // a sum's value; a histogram's sum
	counts []uint64 // a histogram's count per bucket, not cumulative; the last is +Inf
	n      uint64   // a histogram's count
}

var _ redlock.Observer = (*Registry)(nil)

// NewRegistry returns an empty Registry.
func NewRegistry() *Registry {
	return &Registry{now: time.Now, cat: Catalogue(), buckets: Buckets()}
}

// Start keeps ctx: the Registry has no spans.
func (r *Registry) Start(ctx context.Context, _ redlock.Op, _ string) context.Context { return ctx }

// Observe records an event's measurements.
func (r *Registry) Observe(_ context.Context, ev redlock.Event) {
	r.masters.Note(ev)
	Measure(ev, r.record)
}

func (r *Registry) record(id ID, v float64, attrs ...Attr) {
	labels := labelsOf(attrs)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.series[id] == nil {
		r.series[id] = map[string]*point{}
	}
	p := r.series[id][labels]
	if p == nil {
		p = &point{labels: labels}
		if r.cat[id].Kind == Histogram {
			p.counts = make([]uint64, len(r.buckets)+1)
		}
		r.series[id][labels] = p
	}
	if r.cat[id].Kind != Histogram {
		p.value += v
		return
	}
	i, _ := slices.BinarySearch(r.buckets, v) // a value on a boundary falls in its bucket: le is inclusive
	p.counts[i]++
	p.value += v
	p.n++
}

// Count returns a counter's value for the series whose labels are attrs
// (in the instrument's order), or a histogram's count; 0 if none.
func (r *Registry) Count(id ID, attrs ...Attr) float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.series[id][labelsOf(attrs)]
	switch {
	case p == nil:
		return 0
	case p.counts != nil:
		return float64(p.n)
	}
	return p.value
}

// Outcomes returns a counter's or histogram's counts by the value of its
// AttrOutcome, for an instrument whose only attribute that is.
func (r *Registry) Outcomes(id ID) map[string]float64 {
	out := map[string]float64{}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.series[id] {
		v := p.value
		if p.counts != nil {
			v = float64(p.n)
		}
		out[unlabel(p.labels)] += v
	}
	return out
}

// escape escapes a label value as the text format asks.
func escape(v string) string {
	if !strings.ContainsAny(v, "\\\"\n") {
		return v
	}
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(v)
}

// unlabel returns the value of a one-label series' labels.
func unlabel(labels string) string {
	_, v, _ := strings.Cut(labels, "=")
	v = strings.TrimSuffix(strings.TrimPrefix(v, `"`), `"`)
	return strings.NewReplacer(`\n`, "\n", `\"`, `"`, `\\`, `\`).Replace(v)
}

// labelsOf renders attributes as Prometheus labels: k="v",k="v".
func labelsOf(attrs []Attr) string {
	var b strings.Builder
	for i, a := range attrs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(Underscore(a.Key))
		b.WriteString(`="`)
		b.WriteString(escape(a.Value))
		b.WriteByte('"')
	}
	return b.String()
}

// ServeHTTP serves the text exposition, for /metrics.
func (r *Registry) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	r.WriteText(w)
}

// WriteText writes every series as a Prometheus text exposition: the
// catalogue's order, and within an instrument its series sorted.
func (r *Registry) WriteText(w io.Writer) error {
	gauges := map[ID][]string{}
	r.masters.Observe(r.now(), func(id ID, v float64, attrs ...Attr) {
		gauges[id] = append(gauges[id], braces(labelsOf(attrs))+" "+num(v))
	})
	bw := bufio.NewWriter(w)
	r.mu.Lock()
	for _, in := range r.cat {
		name := in.PrometheusName()
		var lines []string
		switch in.Kind {
		case Gauge:
			lines = gauges[in.ID]
		case Histogram:
			// A series' lines stay together and in bucket order: sorted
			// by series, not by line.
			ps := make([]*point, 0, len(r.series[in.ID]))
			for _, p := range r.series[in.ID] {
				ps = append(ps, p)
			}
			slices.SortFunc(ps, func(a, b *point) int { return strings.Compare(a.labels, b.labels) })
			for _, p := range ps {
				lines = append(lines, histogramLines(name, p, r.buckets)...)
			}
		default:
			for _, p := range r.series[in.ID] {
				lines = append(lines, braces(p.labels)+" "+num(p.value))
			}
		}
		if len(lines) == 0 {
			continue
		}
		if in.Kind != Histogram {
			slices.Sort(lines)
		}
		typ := map[Kind]string{Counter: "counter", UpDownCounter: "gauge", Histogram: "histogram", Gauge: "gauge"}[in.Kind]
		fmt.Fprintf(bw, "# HELP %s %s\n# TYPE %s %s\n", name, in.Description, name, typ)
		for _, l := range lines {
			if in.Kind == Histogram {
				bw.WriteString(l + "\n") // named in full by histogramLines
				continue
			}
			bw.WriteString(name + l + "\n")
		}
	}
	r.mu.Unlock()
	return bw.Flush()
}

// histogramLines renders one histogram series: its cumulative buckets, sum
// and count.
func histogramLines(name string, p *point, bounds []float64) []string {
	sep := ""
	if p.labels != "" {
		sep = ","
	}
	var out []string
	var cum uint64
	for i, c := range p.counts {
		cum += c
		le := "+Inf"
		if i < len(bounds) {
			le = num(bounds[i])
		}
		out = append(out, fmt.Sprintf("%s_bucket{%s%sle=%q} %d", name, p.labels, sep, le, cum))
	}
	out = append(out, fmt.Sprintf("%s_sum%s %s", name, braces(p.labels), num(p.value)))
	out = append(out, fmt.Sprintf("%s_count%s %d", name, braces(p.labels), p.n))
	return out
}

// braces puts labels in braces; none, no braces.
func braces(labels string) string {
	if labels == "" {
		return ""
	}
	return "{" + labels + "}"
}

func num(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
