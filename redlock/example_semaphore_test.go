package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/quorumlock/quorumlock/redlock"
)

func ExampleClient_Semaphore() {
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

	s, err := c.Semaphore("render", 2)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d permits, each on %d of 5 masters\n", s.Permits(), s.Quorum())

	ctx := context.Background()
	a, err := s.Acquire(ctx, 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	b, err := s.Acquire(ctx, 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	_, err = s.TryAcquire(ctx, 10*time.Second)
	fmt.Println("a third:", errors.Is(err, redlock.ErrNotObtained))
	fmt.Println("fences ordered:", b.Fence() > a.Fence())
	a.Release(ctx)
	err = s.Do(ctx, 10*time.Second, func(ctx context.Context) error {
		p, _ := redlock.FromContext(ctx)
		fmt.Println("after a release, a permit:", p.Fence() > b.Fence())
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	b.Release(ctx)
	// Output:
	// 2 permits, each on 4 of 5 masters
	// a third: true
	// fences ordered: true
	// after a release, a permit: true
}
