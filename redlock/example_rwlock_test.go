package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/quorumlock/quorumlock/redlock"
)

func ExampleClient_RWLock() {
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

	rw, err := c.RWLock("catalog")
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	r1, err := rw.RLock(ctx, 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	r2, err := rw.TryRLock(ctx, 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("two readers at once")
	_, err = rw.TryLock(ctx, 10*time.Second)
	fmt.Println("a writer beside them:", errors.Is(err, redlock.ErrNotObtained))
	r1.Release(ctx)
	r2.Release(ctx)

	err = rw.DoWrite(ctx, 10*time.Second, func(ctx context.Context) error {
		w, _ := redlock.FromContext(ctx)
		fmt.Println("the writer's fence is above the readers':", w.Fence() > r2.Fence())
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// two readers at once
	// a writer beside them: true
	// the writer's fence is above the readers': true
}
