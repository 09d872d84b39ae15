package redlocktest_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/redlocktest"
)

// closeBooks is the code under test: one worker at a time closes a month's
// books, and the others step back.
func closeBooks(ctx context.Context, c *redlock.Client, month string) error {
	l, err := c.TryLock(ctx, "books:"+month, 10*time.Second)
	if err != nil {
		return err // errors.Is(err, redlock.ErrNotObtained): another worker has it, or no quorum answers
	}
	defer l.Release(ctx)
	// ... write the books with l.Fence(), well before l.Until() ...
	return nil
}

func testCloseBooks(t testing.TB) {
	ctx := context.Background()
	c, masters := redlocktest.Masters(t, 5)

	// Two of five masters down: three are a quorum, and the books close.
	masters.Kill(0)
	masters.Kill(1)
	if err := closeBooks(ctx, c, "2026-11"); err != nil {
		t.Errorf("with three of five masters up: %v", err)
	}

	// A third down: no quorum, no lock.
	masters.Kill(2)
	if err := closeBooks(ctx, c, "2026-11"); !errors.Is(err, redlock.ErrNotObtained) {
		t.Errorf("with two of five masters up: %v, want ErrNotObtained", err)
	}

	// All five back, and another worker, with a client of its own, holds
	// the month: closeBooks steps back.
	for i := range 3 {
		if err := masters.Restart(i); err != nil {
			t.Fatal(err)
		}
	}
	held, err := masters.Client().TryLock(ctx, "books:2026-11", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(ctx)
	if err := closeBooks(ctx, c, "2026-11"); !errors.Is(err, redlock.ErrNotObtained) {
		t.Errorf("while another worker holds the books: %v, want ErrNotObtained", err)
	}
}

// A test of code that takes locks. In a _test.go file, testCloseBooks is
// func TestCloseBooks(t *testing.T), and go test gives it t; here a stand-in
// runs it and prints its verdict, so that the example's output is checked.
func ExampleMasters() {
	t := &exampleT{}
	t.run(testCloseBooks)
	// Output: PASS
}

// exampleT stands in for the *testing.T of a test. It has the methods that
// the test above and redlocktest call; any other panics.
type exampleT struct {
	testing.TB
	failed   bool
	cleanups []func()
}

// run runs test on a goroutine of its own, as go test does, so that Fatal
// can end it; then the cleanups, last registered first; then it prints the
// verdict.
func (t *exampleT) run(test func(testing.TB)) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		test(t)
	}()
	<-done
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
	if t.failed {
		fmt.Println("FAIL")
		return
	}
	fmt.Println("PASS")
}

func (t *exampleT) Helper()          {}
func (t *exampleT) Cleanup(f func()) { t.cleanups = append(t.cleanups, f) }
func (t *exampleT) Log(args ...any)  { fmt.Println(args...) }
func (t *exampleT) Errorf(format string, args ...any) {
	t.failed = true
	fmt.Printf(format+"\n", args...)
}
func (t *exampleT) Fatal(args ...any) {
	t.failed = true
	fmt.Println(args...)
	runtime.Goexit()
}
func (t *exampleT) Fatalf(format string, args ...any) {
	t.failed = true
	fmt.Printf(format+"\n", args...)
	runtime.Goexit()
}
