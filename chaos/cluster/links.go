package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// links is the mesh of in-process toxiproxy proxies: one per client and
// master, so a fault can hit one client's view of one master.
type links struct {
	server  *toxiproxy.ApiServer
	mu      sync.Mutex
	proxies [][]*toxiproxy.Proxy // [client][node]
}

// newLinks starts clients×len(upstreams) proxies on loopback ports.
func newLinks(clients int, upstreams []string) (*links, error) {
	logger := zerolog.Nop()
	m := &links{server: toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), logger)}
	for c := range clients {
		row := make([]*toxiproxy.Proxy, len(upstreams))
		for n, up := range upstreams {
			p := toxiproxy.NewProxy(m.server, fmt.Sprintf("c%d-n%d", c, n), "127.0.0.1:0", up)
			if err := p.Start(); err != nil {
				m.close()
				return nil, fmt.Errorf("cluster: proxy for client %d to node %d: %w", c, n, err)
			}
			row[n] = p
		}
		m.proxies = append(m.proxies, row)
	}
	return m, nil
}

// addrs returns client's proxy addresses, in node order.
func (m *links) addrs(client int) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if client < 0 || client >= len(m.proxies) {
		return nil
	}
	out := make([]string, len(m.proxies[client]))
	for n, p := range m.proxies[client] {
		out[n] = p.Listen
	}
	return out
}

// selected returns the proxies of a link.
func (m *links) selected(l Link) ([]*toxiproxy.Proxy, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.proxies) == 0 || l.Node < 0 || l.Node >= len(m.proxies[0]) {
		return nil, fmt.Errorf("cluster: link %v: node out of range", l)
	}
	if l.Client == AllClients {
		out := make([]*toxiproxy.Proxy, 0, len(m.proxies))
		for _, row := range m.proxies {
			out = append(out, row[l.Node])
		}
		return out, nil
	}
	if l.Client < 0 || l.Client >= len(m.proxies) {
		return nil, fmt.Errorf("cluster: link %v: client out of range", l)
	}
	return []*toxiproxy.Proxy{m.proxies[l.Client][l.Node]}, nil
}

// toxic is one toxiproxy toxic as its JSON API describes it.
type toxic struct {
	Name       string         `json:"name"`
	Type       string         `json:"type"`
	Stream     string         `json:"stream"`
	Toxicity   float32        `json:"toxicity"`
	Attributes map[string]any `json:"attributes"`
}

// toxics translates an impairment into toxiproxy toxics.
func toxics(imp Impairment) ([]toxic, error) {
	mk := func(typ, stream string, attrs map[string]any) toxic {
		return toxic{Name: typ + "-" + stream, Type: typ, Stream: stream, Toxicity: 1, Attributes: attrs}
	}
	switch imp.Kind {
	case Slow:
		if imp.Latency <= 0 || imp.Jitter < 0 || imp.Jitter > imp.Latency {
			return nil, fmt.Errorf("cluster: latency %v ± %v: need latency > 0 and 0 <= jitter <= latency", imp.Latency, imp.Jitter)
		}
		return []toxic{mk("latency", "downstream", map[string]any{
			"latency": imp.Latency.Milliseconds(), "jitter": imp.Jitter.Milliseconds(),
		})}, nil
	case DropReplies:
		return []toxic{mk("timeout", "downstream", map[string]any{"timeout": 0})}, nil
	case Blackhole:
		return []toxic{
			mk("timeout", "upstream", map[string]any{"timeout": 0}),
			mk("timeout", "downstream", map[string]any{"timeout": 0}),
		}, nil
	case Reject:
		return []toxic{mk("reset_peer", "upstream", map[string]any{"timeout": 0})}, nil
	}
	return nil, fmt.Errorf("cluster: unknown impairment %v", imp.Kind)
}

// impair adds the impairment's toxics to the link's proxies, replacing a
// toxic of the same name.
func (m *links) impair(ctx context.Context, l Link, imp Impairment) error {
	ts, err := toxics(imp)
	if err != nil {
		return err
	}
	ps, err := m.selected(l)
	if err != nil {
		return err
	}
	for _, p := range ps {
		for _, t := range ts {
			body, err := json.Marshal(t)
			if err != nil {
				return err
			}
			if p.Toxics.GetToxic(t.Name) != nil {
				if err := p.Toxics.RemoveToxic(ctx, t.Name); err != nil {
					return fmt.Errorf("cluster: %v: replacing %s: %w", l, t.Name, err)
				}
			}
			if _, err := p.Toxics.AddToxicJson(strings.NewReader(string(body))); err != nil {
				return fmt.Errorf("cluster: %v: adding %s: %w", l, t.Name, err)
			}
		}
	}
	return nil
}

// heal removes every toxic from the link's proxies.
func (m *links) heal(ctx context.Context, l Link) error {
	ps, err := m.selected(l)
	if err != nil {
		return err
	}
	for _, p := range ps {
		p.Toxics.ResetToxics(ctx)
	}
	return nil
}

// repoint sends every client's proxy of node to upstream, closing the
// connections open through it. Each proxy stops and starts again on its own
// address, keeping its toxics.
func (m *links) repoint(node int, upstream string) error {
	ps, err := m.selected(Link{Client: AllClients, Node: node})
	if err != nil {
		return err
	}
	for _, p := range ps {
		if err := p.Update(&toxiproxy.Proxy{Listen: p.Listen, Upstream: upstream, Enabled: true}); err != nil {
			return fmt.Errorf("cluster: repoint %s to %s: %w", p.Name, upstream, err)
		}
	}
	return nil
}

// close stops every proxy and closes its connections.
func (m *links) close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, row := range m.proxies {
		for _, p := range row {
			if p != nil {
				p.Stop()
			}
		}
	}
	m.proxies = nil
}
