package redlock

import (
	"context"
	"log/slog"
)

// defaultLogger is the logger of a client built without WithLogger: the
// handler of slog.Default() as it is now, passed only records at WARN and
// above. What a library does on its own below that (a master quarantined
// after a restart, a retry) is for a program that asks to see it.
func defaultLogger() *slog.Logger {
	return slog.New(atLeast{Handler: slog.Default().Handler(), level: slog.LevelWarn})
}

// atLeast passes on to its Handler the records at level or above, and
// drops the rest.
type atLeast struct {
	slog.Handler
	level slog.Level
}

func (h atLeast) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.level && h.Handler.Enabled(ctx, l)
}

func (h atLeast) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < h.level {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h atLeast) WithAttrs(as []slog.Attr) slog.Handler {
	return atLeast{Handler: h.Handler.WithAttrs(as), level: h.level}
}

func (h atLeast) WithGroup(name string) slog.Handler {
	return atLeast{Handler: h.Handler.WithGroup(name), level: h.level}
}
