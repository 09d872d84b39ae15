package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"
)

// progress reports a running benchmark: a bar redrawn in place on a
// terminal, a plain line per second otherwise (a log, a pipe, CI).
type progress struct {
	w     io.Writer
	tty   bool
	total time.Duration
}

// newProgress reports to w; it draws a bar only if w is a terminal.
func newProgress(w io.Writer, total time.Duration) *progress {
	f, ok := w.(*os.File)
	return &progress{w: w, tty: ok && term.IsTerminal(int(f.Fd())), total: total}
}

// interval is how often update should be called.
func (p *progress) interval() time.Duration {
	if p.tty {
		return 200 * time.Millisecond
	}
	return time.Second
}

// update shows the state after elapsed: ops done in all, at rate per second
// over the last interval.
func (p *progress) update(elapsed time.Duration, ops uint64, rate float64) {
	if !p.tty {
		fmt.Fprintf(p.w, "bench: %5.1fs  %8d ops  %9.0f ops/s\n", elapsed.Seconds(), ops, rate)
		return
	}
	const width = 30
	frac := min(max(elapsed.Seconds()/p.total.Seconds(), 0), 1)
	done := int(frac * width)
	fmt.Fprintf(p.w, "\r[%s%s] %3.0f%%  %5.1fs  %8d ops  %9.0f ops/s\x1b[K",
		strings.Repeat("#", done), strings.Repeat("-", width-done), frac*100, elapsed.Seconds(), ops, rate)
}

// finish clears the bar so that the table starts on a clean line.
func (p *progress) finish() {
	if p.tty {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}
