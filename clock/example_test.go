package clock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/quorumlock/quorumlock/clock"
)

// A test drives code that waits on a timer without sleeping: it waits until
// the code has parked on the fake clock, then moves the clock.
func ExampleFake() {
	clk := clock.NewFake(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	done := make(chan time.Time)
	go func() { // the code under test
		t := clk.NewTimer(5 * time.Second)
		done <- <-t.C()
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := clk.BlockUntil(ctx, 1); err != nil {
		fmt.Println(err)
		return
	}
	clk.Advance(5 * time.Second)
	fmt.Println((<-done).Format(time.TimeOnly))
	// Output: 00:00:05
}

// A context from WithTimeout expires when the fake time passes its deadline.
func ExampleFake_WithTimeout() {
	clk := clock.NewFake(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	ctx, cancel := clk.WithTimeout(context.Background(), time.Second)
	defer cancel()

	clk.Advance(999 * time.Millisecond)
	fmt.Println(ctx.Err())
	clk.Advance(time.Millisecond)
	fmt.Println(ctx.Err(), context.Cause(ctx))
	// Output:
	// <nil>
	// context deadline exceeded context deadline exceeded
}
