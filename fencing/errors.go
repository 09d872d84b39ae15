package fencing

import (
	"errors"
	"fmt"
)

var (
	// ErrStale means the write carried a fence older than one the resource
	// has already recorded: a newer holder has written since, so the
	// writer's lock is gone. The transaction must not commit. The error is
	// a *StaleError, which names both fences.
	ErrStale = errors.New("fencing: stale fence")

	// ErrInvalid marks bad input: a nil transaction, an empty resource
	// name, a fence that is not positive, an unknown dialect, a name that is
	// not a plain SQL identifier. The error's text names the value.
	ErrInvalid = errors.New("fencing: invalid argument")

	// ErrNotFound means Update found no row with the given key.
	ErrNotFound = errors.New("fencing: no such row")
)

// StaleError is a refused write: its fence, and the higher one already
// recorded for the resource. errors.Is(err, ErrStale) holds for it, and
// errors.As finds it.
type StaleError struct {
	// Resource is the resource's name; for Update, the table and the row's
	// key ("accounts id=42").
	Resource string
	// Fence is the fence the refused write carried.
	Fence int64
	// Highest is the fence the resource had already recorded, from a
	// newer holder. It is higher than Fence.
	Highest int64
}

// Error names the resource and both fences.
func (e *StaleError) Error() string {
	return fmt.Sprintf("fencing: stale fence: resource %q: fence %d is older than %d, already recorded", e.Resource, e.Fence, e.Highest)
}

// Unwrap returns ErrStale.
func (e *StaleError) Unwrap() error { return ErrStale }

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}
