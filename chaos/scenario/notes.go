package scenario

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/quorumlock/quorumlock/chaos/history"
)

// notes is a slog.Handler that keeps the library's Info and Warn messages
// (a master put in restart quarantine, a lock lost) as notes of the run.
type notes struct {
	h      *history.History
	client int
	attrs  []slog.Attr
}

func (n notes) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }

func (n notes) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "client %d: %s", n.client, r.Message)
	add := func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	}
	for _, a := range n.attrs {
		add(a)
	}
	r.Attrs(add)
	n.h.Notef("%s", b.String())
	return nil
}

func (n notes) WithAttrs(as []slog.Attr) slog.Handler {
	n.attrs = append(n.attrs[:len(n.attrs):len(n.attrs)], as...)
	return n
}

func (n notes) WithGroup(string) slog.Handler { return n }
