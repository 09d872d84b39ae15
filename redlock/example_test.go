package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"time"

	"github.com/quorumlock/quorumlock/pool"
	"github.com/quorumlock/quorumlock/redlock"
)

// addrs reads the masters of the examples from REDLOCK_NODES, as the
// redlock command does; by default the five of the repository's
// docker-compose.yml.
func addrs() []string {
	if s := os.Getenv("REDLOCK_NODES"); s != "" {
		return splitComma(s)
	}
	return []string{"127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003", "127.0.0.1:7004", "127.0.0.1:7005"}
}

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			if i > start {
				out = append(out, s[start:i])
			}
			start = i + 1
		}
	}
	return out
}

func Example() {
	c, err := redlock.NewFromAddrs(addrs())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	ctx := context.Background()
	l, err := c.Lock(ctx, "report:daily", 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	defer l.Release(ctx)
	fmt.Println("held for", l.Validity().Round(time.Second), "with fence", l.Fence())
}

func ExampleClient_Do() {
	c, err := redlock.NewFromAddrs(addrs())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	err = c.Do(context.Background(), "invoice:42", 10*time.Second, func(ctx context.Context) error {
		// The lock is extended while this runs. If it is lost, ctx is
		// cancelled with context.Cause(ctx) == redlock.ErrLockLost.
		l, _ := redlock.FromContext(ctx)
		return chargeInvoice(ctx, 42, l.Fence())
	})
	if errors.Is(err, redlock.ErrLockLost) {
		log.Print("the lock was lost while charging; check the invoice")
	}
}

// chargeInvoice stands for a write to a resource that refuses stale fences.
func chargeInvoice(ctx context.Context, id int, fence int64) error { return ctx.Err() }

func ExampleClient_TryLock() {
	c, err := redlock.NewFromAddrs(addrs())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	ctx := context.Background()
	l, err := c.TryLock(ctx, "cron:cleanup", time.Minute)
	switch {
	case errors.Is(err, redlock.ErrQuarantined), errors.Is(err, redlock.ErrMisconfigured):
		log.Fatal(err) // nobody holds it: masters sit out a restart window, or refuse the lock's commands
	case errors.Is(err, redlock.ErrNotObtained):
		return // another worker runs it
	case err != nil:
		log.Fatal(err)
	}
	defer l.Release(ctx)
	// ... the job, finished well before l.Until() ...
}

// Fencing: the protected resource refuses writes that carry a fence lower
// than the highest it has seen, so a holder that lost its lock cannot
// overwrite the next holder's work.
func ExampleLock_Fence() {
	c, err := redlock.NewFromAddrs(addrs())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	ctx := context.Background()
	l, err := c.Lock(ctx, "account:7", 5*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	defer l.Release(ctx)
	// e.g. UPDATE accounts SET balance = $1, fence = $2 WHERE id = 7 AND fence <= $2
	fmt.Println("write with fence", l.Fence())
}

func ExampleWithOwner() {
	c, err := redlock.NewFromAddrs(addrs())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	ctx := context.Background()
	outer, err := c.Lock(ctx, "batch:9", 30*time.Second, redlock.WithOwner("worker-3"))
	if err != nil {
		log.Fatal(err)
	}
	// A nested call by the same owner gets the lock at once.
	inner, err := c.Lock(ctx, "batch:9", 30*time.Second, redlock.WithOwner("worker-3"))
	if err != nil {
		log.Fatal(err)
	}
	inner.Release(ctx) // still held by the outer hold
	outer.Release(ctx) // freed; waiters are woken
}

func ExampleWithAutoExtend() {
	c, err := redlock.NewFromAddrs(addrs())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	ctx := context.Background()
	l, err := c.Lock(ctx, "leader", 10*time.Second, redlock.WithAutoExtend())
	if err != nil {
		log.Fatal(err)
	}
	defer l.Release(ctx)
	select {
	case <-l.Done():
		log.Print("leadership lost: ", l.Err())
	case <-time.After(time.Minute):
		// a minute of leadership, extended every ~3s
	}
}

// New takes pools built with options of their own: here TLS with a
// username and password, and a tighter read timeout.
func ExampleNew() {
	var pools []pool.Pool
	for _, a := range []string{"rediss://locker:pw@r1.internal:6380/0", "rediss://locker:pw@r2.internal:6380/0", "rediss://locker:pw@r3.internal:6380/0"} {
		p, err := pool.New(a, pool.WithReadTimeout(200*time.Millisecond))
		if err != nil {
			log.Fatal(err)
		}
		defer p.Close()
		pools = append(pools, p)
	}
	c, err := redlock.New(pools,
		redlock.WithDriftFactor(0.02),
		redlock.WithNodeTimeout(30*time.Millisecond),
		redlock.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
	)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	fmt.Println(c.Nodes(), "masters, quorum", c.Quorum())
	// Output: 3 masters, quorum 2
}

// Bad input gets an error that says what is wrong, never a panic.
func ExampleNewFromAddrs_invalid() {
	_, err := redlock.NewFromAddrs([]string{"127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003"}, redlock.WithQuorum(1))
	fmt.Println(errors.Is(err, redlock.ErrInvalid))
	fmt.Println(err)
	// Output:
	// true
	// redlock: invalid argument: quorum 1 is below a majority of 3 nodes (2)
}
