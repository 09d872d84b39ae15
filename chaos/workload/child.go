package workload

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/quorumlock/quorumlock/redlock"
)

// ChildEnv names the environment variable that makes a test binary a waiter
// process (see IsChild and ChildMain); its value is the process's
// ChildConfig as JSON.
const ChildEnv = "QUORUMLOCK_CHAOS_WAITER"

// IsChild reports whether this process was started as a waiter process.
func IsChild() bool { return os.Getenv(ChildEnv) != "" }

// ChildConfig is what one waiter process does: one redlock.Client of its
// own over its own links, one goroutine looping Lock, the critical
// section, Release.
type ChildConfig struct {
	Client      int      // the client's number, whose links it uses
	Incarnation int      // how many times the client was started before
	Addrs       []string // its links to the masters, in node order
	Key         string
	TTL         time.Duration
	NodeTimeout time.Duration
	Guard       bool          // the restart guard on (the library's default)
	Wait        time.Duration // bounds each Lock call
	Pause       time.Duration // the longest pause inside the critical section
	Backoff     time.Duration // the longest wait after a failed Lock call
	Seed        uint64
	// QueueLease is the lease of the client's places in the masters'
	// waiting lines (redlock.WithQueueLease); 0 leaves the library's
	// default.
	QueueLease time.Duration
}

// event is one line a waiter process writes to its stdout. Times are
// CLOCK_MONOTONIC readings in nanoseconds, which every process on the host
// shares; the parent converts them to the run's clock.
type event struct {
	K     string `json:"k"` // token, wait, got, fail, write, release, released, note
	At    int64  `json:"at,omitempty"`
	End   int64  `json:"end,omitempty"`
	Until int64  `json:"until,omitempty"`
	Token string `json:"token,omitempty"`
	Fence int64  `json:"fence,omitempty"`
	Valid bool   `json:"valid,omitempty"`
	Err   string `json:"err,omitempty"`
	Tries int    `json:"tries,omitempty"` // a got or fail: the Lock call's attempts
	// Kind classifies Err: "canceled" or "deadline" for a ctx that ended.
	Kind string `json:"kind,omitempty"`
	Text string `json:"text,omitempty"`
}

// The lines the parent writes to a waiter's stdin.
const (
	replyOK = "ok"   // the parent did its part of the critical section
	stopMsg = "stop" // end the Lock call under way and exit
)

// monoNow reads CLOCK_MONOTONIC.
func monoNow() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(err) // never fails on Linux
	}
	return ts.Nano()
}

// ChildMain is the main of a waiter process: it reads its ChildConfig from
// ChildEnv and loops until the parent says stop, or its stdin closes, and
// returns the process's exit code. The parent does the critical section's
// reads and writes (the shared set, the fenced store) when told, so that
// they are the same objects as the other scenarios'; the waiter waits for
// each to be done before it goes on.
func ChildMain() int {
	var cfg ChildConfig
	if err := json.Unmarshal([]byte(os.Getenv(ChildEnv)), &cfg); err != nil {
		fmt.Fprintf(os.Stderr, "waiter: bad %s: %v\n", ChildEnv, err)
		return 2
	}
	out := &emitter{w: os.Stdout}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	replies := make(chan struct{})
	go func() {
		defer cancel()
		defer close(replies)
		in := bufio.NewScanner(os.Stdin)
		for in.Scan() {
			switch in.Text() {
			case replyOK:
				replies <- struct{}{}
			case stopMsg:
				cancel()
			}
		}
	}()
	opts := []redlock.Option{
		redlock.WithNodeTimeout(cfg.NodeTimeout),
		redlock.WithTokenGenerator(func() (string, error) {
			t, err := redlock.RandomToken()
			if err == nil {
				out.emit(event{K: "token", Token: t}) // before the token can reach a master
			}
			return t, err
		}),
		redlock.WithLogger(slog.New(noteHandler{out: out})),
		redlock.WithObserver(Tries{}),
	}
	if !cfg.Guard {
		opts = append(opts, redlock.WithRestartGuard(0))
	}
	if cfg.QueueLease > 0 {
		opts = append(opts, redlock.WithQueueLease(cfg.QueueLease))
	}
	c, err := redlock.NewFromAddrs(cfg.Addrs, opts...)
	if err != nil {
		fmt.Fprintf(os.Stderr, "waiter: %v\n", err)
		return 2
	}
	defer c.Close()
	rng := rand.New(rand.NewPCG(cfg.Seed, uint64(cfg.Client)|uint64(cfg.Incarnation)<<32))
	await := func() bool {
		_, ok := <-replies
		return ok
	}
	for ctx.Err() == nil {
		start := monoNow()
		out.emit(event{K: "wait", At: start})
		lctx, lcancel := context.WithTimeout(ctx, cfg.Wait)
		lctx, tries := WithTries(lctx)
		l, err := c.Lock(lctx, cfg.Key, cfg.TTL)
		lcancel()
		end := monoNow()
		if err != nil {
			out.emit(event{K: "fail", At: start, End: end, Err: err.Error(), Kind: errKind(err), Tries: int(tries.Load())})
			sleep(ctx, cfg.Backoff/4+time.Duration(rng.Int64N(int64(cfg.Backoff*3/4)+1)))
			continue
		}
		now, m := time.Now(), monoNow()
		out.emit(event{K: "got", At: start, End: end, Token: l.Token(), Fence: l.Fence(), Until: m + int64(l.Until().Sub(now)), Tries: int(tries.Load())})
		// The parent reads the shared set; then the pause of a read-modify-write.
		if await() {
			time.Sleep(time.Duration(rng.Int64N(int64(cfg.Pause) + 1)))
			out.emit(event{K: "write", Valid: l.Validity() > 0})
			await()
		}
		out.emit(event{K: "release", At: monoNow()})
		rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = l.Release(rctx)
		rcancel()
		ev := event{K: "released"}
		if err != nil {
			ev.Err = err.Error()
		}
		out.emit(ev)
		sleep(ctx, time.Duration(rng.Int64N(int64(3*time.Millisecond))))
	}
	return 0
}

func errKind(err error) string {
	switch {
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline"
	}
	return ""
}

// emitter writes events, one line each, with one write per line: a line
// written before the process is killed reaches the parent whole.
type emitter struct {
	mu sync.Mutex
	w  io.Writer
}

func (e *emitter) emit(ev event) {
	b, err := json.Marshal(ev)
	if err != nil {
		panic(err) // an event always marshals
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.w.Write(append(b, '\n'))
}

// noteHandler sends the library's Info and Warn messages to the parent as
// notes of the run.
type noteHandler struct {
	out   *emitter
	attrs []slog.Attr
}

func (n noteHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }

func (n noteHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	add := func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	}
	for _, a := range n.attrs {
		add(a)
	}
	r.Attrs(add)
	n.out.emit(event{K: "note", Text: b.String()})
	return nil
}

func (n noteHandler) WithAttrs(as []slog.Attr) slog.Handler {
	n.attrs = append(n.attrs[:len(n.attrs):len(n.attrs)], as...)
	return n
}

func (n noteHandler) WithGroup(string) slog.Handler { return n }
