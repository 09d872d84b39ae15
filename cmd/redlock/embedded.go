package main

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/alicebob/miniredis/v2"

	"github.com/quorumlock/quorumlock/redlock"
)

// embedded is a set of in-process Redis-protocol masters (miniredis) on
// loopback, for demo and bench when no masters are given.
//
// Their keys expire in real time (miniredis's ClockTTL), as on a real
// master. A kill closes a master's listener and connections; a restart
// opens the same port again with the data it had, which is what a Redis
// master with appendonly yes and appendfsync always does after a crash.
type embedded struct {
	mu      sync.Mutex
	masters []*miniredis.Miniredis
	up      []bool
	addrs   []string
}

// startEmbedded starts n masters on free loopback ports.
func startEmbedded(n int) (*embedded, error) {
	e := &embedded{}
	for range n {
		m := miniredis.NewMiniRedis()
		m.ClockTTL(true)
		if err := m.Start(); err != nil {
			e.close()
			return nil, fmt.Errorf("starting an in-process master: %w", err)
		}
		e.masters = append(e.masters, m)
		e.up = append(e.up, true)
		e.addrs = append(e.addrs, m.Addr())
	}
	return e, nil
}

// kill stops master i: its clients see connections refused.
func (e *embedded) kill(i int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.up[i] {
		e.masters[i].Close()
		e.up[i] = false
	}
}

// restart brings master i back on its port, with its data.
func (e *embedded) restart(i int) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.up[i] {
		return nil
	}
	if err := e.masters[i].Restart(); err != nil {
		return fmt.Errorf("restarting in-process master %d on %s: %w", i, e.addrs[i], err)
	}
	e.up[i] = true
	return nil
}

// upCount returns how many masters are running.
func (e *embedded) upCount() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, u := range e.up {
		if u {
			n++
		}
	}
	return n
}

// close stops every master.
func (e *embedded) close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, m := range e.masters {
		if e.up[i] {
			m.Close()
			e.up[i] = false
		}
	}
}

// embeddedOptions are the client options the in-process masters need. They
// have no INFO to read, so the library's guard votes them in only when told
// to trust what it cannot read; its warning about that is expected here and
// goes to info level.
func embeddedOptions(log *slog.Logger) []redlock.Option {
	return []redlock.Option{redlock.WithTrustUnreadable(), redlock.WithLogger(slog.New(knownBlind{log.Handler()}))}
}

// knownBlind lowers the guard's warning about a master trusted unread.
type knownBlind struct{ slog.Handler }

func (h knownBlind) Handle(ctx context.Context, r slog.Record) error {
	if r.Level == slog.LevelWarn {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "state" && a.Value.String() == "unreadable-trusted" {
				r.Level = slog.LevelInfo
				return false
			}
			return true
		})
		if !h.Enabled(ctx, r.Level) {
			return nil
		}
	}
	return h.Handler.Handle(ctx, r)
}

func (h knownBlind) WithAttrs(as []slog.Attr) slog.Handler {
	return knownBlind{h.Handler.WithAttrs(as)}
}

func (h knownBlind) WithGroup(name string) slog.Handler { return knownBlind{h.Handler.WithGroup(name)} }
