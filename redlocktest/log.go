package redlocktest

import (
	"context"
	"log/slog"
	"strings"
	"testing"
)

// testLogger returns the logger of the group's clients: warnings and errors
// go to t.Log, without the time, which the test log has; the warning that a
// master is trusted unread is dropped, since for these masters it is the
// expected state and would repeat on every kill.
func testLogger(t testing.TB) *slog.Logger {
	text := slog.NewTextHandler(tbWriter{t}, &slog.HandlerOptions{
		Level: slog.LevelWarn,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	})
	return slog.New(trustedUnread{text})
}

// tbWriter writes each record, which a slog.TextHandler writes whole, as a
// line of the test log.
type tbWriter struct{ t testing.TB }

func (w tbWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// trustedUnread drops the records whose "state" is "unreadable-trusted".
type trustedUnread struct{ slog.Handler }

func (h trustedUnread) Handle(ctx context.Context, r slog.Record) error {
	expected := false
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "state" && a.Value.String() == "unreadable-trusted" {
			expected = true
			return false
		}
		return true
	})
	if expected {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h trustedUnread) WithAttrs(as []slog.Attr) slog.Handler {
	return trustedUnread{h.Handler.WithAttrs(as)}
}

func (h trustedUnread) WithGroup(name string) slog.Handler {
	return trustedUnread{h.Handler.WithGroup(name)}
}
