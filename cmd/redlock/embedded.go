package main

import (
	"context"
	"log/slog"

	"github.com/quorumlock/quorumlock/redlock"
)

// embeddedOptions are the client options the in-process masters
// (redlocktest.Start) need, for demo and bench when no masters are given. They
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
