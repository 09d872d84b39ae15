package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"time"

	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/driver/redigo"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/redlocktest"
)

// startMasters starts n in-process masters (package redlocktest), so that
// the examples run, and their output is checked, where no Redis runs.
func startMasters(n int) *redlocktest.Servers {
	m, err := redlocktest.Start(n)
	if err != nil {
		log.Fatal(err)
	}
	return m
}

func Example() {
	masters := startMasters(5) // for the example; in production, your masters' addresses
	defer masters.Close()
	c, err := redlock.NewFromAddrs(masters.Addrs(),
		// What in-process masters need, not advice for real ones: they
		// report no state for the restart guard to read, and answer slowly.
		redlock.WithTrustUnreadable(), redlock.WithNodeTimeout(time.Second))
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
	fmt.Println("valid for more than 9s of 10s:", l.Validity() > 9*time.Second)
	fmt.Println("fenced:", l.Fence() > 0)
	// Output:
	// valid for more than 9s of 10s: true
	// fenced: true
}

func ExampleClient_Do() {
	masters := startMasters(5) // for the example; in production, your masters' addresses
	defer masters.Close()
	c, err := redlock.NewFromAddrs(masters.Addrs(),
		// What in-process masters need, not advice for real ones: they
		// report no state for the restart guard to read, and answer slowly.
		redlock.WithTrustUnreadable(), redlock.WithNodeTimeout(time.Second))
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
	fmt.Println("charged:", err == nil)
	// Output:
	// charging invoice 42, fenced: true
	// charged: true
}

// chargeInvoice stands for a write to a resource that refuses stale fences.
func chargeInvoice(ctx context.Context, id int, fence int64) error {
	fmt.Printf("charging invoice %d, fenced: %v\n", id, fence > 0)
	return ctx.Err()
}

func ExampleClient_TryLock() {
	masters := startMasters(5) // for the example; in production, your masters' addresses
	defer masters.Close()
	c, err := redlock.NewFromAddrs(masters.Addrs(),
		// What in-process masters need, not advice for real ones: they
		// report no state for the restart guard to read, and answer slowly.
		redlock.WithTrustUnreadable(), redlock.WithNodeTimeout(time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	ctx := context.Background()
	l, err := c.TryLock(ctx, "cron:cleanup", 10*time.Second)
	switch {
	case errors.Is(err, redlock.ErrQuarantined), errors.Is(err, redlock.ErrMisconfigured):
		log.Fatal(err) // nobody holds it: masters sit out a restart window, or refuse the lock's commands
	case errors.Is(err, redlock.ErrHeld):
		fmt.Println("another worker runs it")
		return
	case errors.Is(err, redlock.ErrNotObtained):
		log.Fatal(err) // too few masters answered in time
	case err != nil:
		log.Fatal(err)
	}
	defer l.Release(ctx)
	// ... the job, finished well before l.Until() ...
	fmt.Println("cleaning up")
	// Output: cleaning up
}

// Fencing: the protected resource refuses writes that carry a fence lower
// than the highest it has seen, so a holder that lost its lock cannot
// overwrite the next holder's work.
func ExampleLock_Fence() {
	masters := startMasters(5) // for the example; in production, your masters' addresses
	defer masters.Close()
	c, err := redlock.NewFromAddrs(masters.Addrs(),
		// What in-process masters need, not advice for real ones: they
		// report no state for the restart guard to read, and answer slowly.
		redlock.WithTrustUnreadable(), redlock.WithNodeTimeout(time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	ctx := context.Background()
	first, err := c.Lock(ctx, "account:7", 5*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	// e.g. UPDATE accounts SET balance = $1, fence = $2 WHERE id = 7 AND fence <= $2
	first.Release(ctx)
	next, err := c.Lock(ctx, "account:7", 5*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	defer next.Release(ctx)
	fmt.Println("the next holder's fence is higher:", next.Fence() > first.Fence())
	// Output: the next holder's fence is higher: true
}

func ExampleWithOwner() {
	masters := startMasters(5) // for the example; in production, your masters' addresses
	defer masters.Close()
	c, err := redlock.NewFromAddrs(masters.Addrs(),
		// What in-process masters need, not advice for real ones: they
		// report no state for the restart guard to read, and answer slowly.
		redlock.WithTrustUnreadable(), redlock.WithNodeTimeout(time.Second))
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
	_, err = c.TryLock(ctx, "batch:9", time.Second)
	fmt.Println("held by the outer hold:", errors.Is(err, redlock.ErrNotObtained))

	outer.Release(ctx) // freed; waiters are woken
	l, err := c.TryLock(ctx, "batch:9", time.Second)
	fmt.Println("free after the outer release:", err == nil)
	if err == nil {
		l.Release(ctx)
	}
	// Output:
	// held by the outer hold: true
	// free after the outer release: true
}

func ExampleWithAutoExtend() {
	masters := startMasters(5) // for the example; in production, your masters' addresses
	defer masters.Close()
	c, err := redlock.NewFromAddrs(masters.Addrs(),
		// What in-process masters need, not advice for real ones: they
		// report no state for the restart guard to read, and answer slowly.
		redlock.WithTrustUnreadable(), redlock.WithNodeTimeout(time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	ctx := context.Background()
	l, err := c.Lock(ctx, "leader", time.Second, redlock.WithAutoExtend())
	if err != nil {
		log.Fatal(err)
	}
	defer l.Release(ctx)
	select {
	case <-l.Done():
		fmt.Println("leadership lost:", l.Err())
	case <-time.After(2500 * time.Millisecond):
		fmt.Println("still the leader, 2.5 TTLs on") // extended every ~333ms
	}
	// Output: still the leader, 2.5 TTLs on
}

// New takes masters built with options of their own: here redigo pools with TLS, a
// username and password, and a tighter read timeout.
func ExampleNew() {
	var pools []driver.Master
	for _, a := range []string{"rediss://locker:pw@r1.internal:6380/0", "rediss://locker:pw@r2.internal:6380/0", "rediss://locker:pw@r3.internal:6380/0"} {
		p, err := redigo.New(a, redigo.WithReadTimeout(200*time.Millisecond))
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

func ExampleClient_Resume() {
	masters := startMasters(5) // for the example; in production, your masters' addresses
	defer masters.Close()
	newClient := func() *redlock.Client {
		c, err := redlock.NewFromAddrs(masters.Addrs(),
			// What in-process masters need, not advice for real ones: they
			// report no state for the restart guard to read, and answer slowly.
			redlock.WithTrustUnreadable(), redlock.WithNodeTimeout(time.Second))
		if err != nil {
			log.Fatal(err)
		}
		return c
	}
	ctx := context.Background()

	// The process that takes the lock hands the job on: its key and token.
	taker := newClient()
	defer taker.Close()
	l, err := taker.Lock(ctx, "report:daily", 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	key, token := l.Key(), l.Token()

	// The process that does the job (here, another client) resumes the
	// lock, extends it and releases it.
	worker := newClient()
	defer worker.Close()
	r, err := worker.Resume(ctx, key, token, 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("the taker's fence:", r.Fence() == l.Fence())
	if err := r.Extend(ctx, 20*time.Second); err != nil {
		log.Fatal(err)
	}
	fmt.Println("extended:", r.Validity() > 19*time.Second)
	r.Release(ctx)

	_, err = worker.Resume(ctx, key, token, 10*time.Second)
	fmt.Println("released:", errors.Is(err, redlock.ErrLockNotHeld))
	// Output:
	// the taker's fence: true
	// extended: true
	// released: true
}
