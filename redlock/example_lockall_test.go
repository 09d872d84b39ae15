package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/quorumlock/quorumlock/redlock"
)

func ExampleClient_LockAll() {
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
	// A transfer holds both accounts; another, the other way round, waits
	// for them without deadlock: nobody holds part of a set while waiting.
	l, err := c.LockAll(ctx, []string{"account:1", "account:2"}, 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("holds:", l.Keys())
	_, err = c.TryLockAll(ctx, []string{"account:2", "account:3"}, 10*time.Second)
	fmt.Println("account:2 and account:3:", errors.Is(err, redlock.ErrNotObtained))
	k, err := c.TryLock(ctx, "account:3", 10*time.Second)
	fmt.Println("account:3 alone is free:", err == nil)
	k.Release(ctx)
	fenced := l.FenceOf("account:1") > 0 && l.FenceOf("account:2") > 0
	fmt.Println("each key fenced:", fenced)
	l.Release(ctx)
	m, err := c.LockAll(ctx, []string{"account:2", "account:1"}, 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("the other way round, after the release:", m.FenceOf("account:2") > l.FenceOf("account:2"))
	m.Release(ctx)
	// Output:
	// holds: [account:1 account:2]
	// account:2 and account:3: true
	// account:3 alone is free: true
	// each key fenced: true
	// the other way round, after the release: true
}
