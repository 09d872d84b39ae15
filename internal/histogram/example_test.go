package histogram_test

import (
	"fmt"
	"time"

	"github.com/quorumlock/quorumlock/internal/histogram"
)

func Example() {
	// One histogram per goroutine; merged when they are done.
	var a, b histogram.Histogram
	for i := range 100 {
		a.Record(time.Duration(i+1) * time.Millisecond)
		b.Record(time.Duration(i+101) * time.Millisecond)
	}
	a.Merge(&b)
	fmt.Println(a.Count(), a.Min(), a.Max(), a.Mean())
	// A quantile is within 0.4% of the recorded duration it stands for.
	fmt.Println(a.Quantile(0.5).Round(time.Millisecond), a.Quantile(0.99).Round(time.Millisecond))
	// Output:
	// 200 1ms 200ms 100.5ms
	// 100ms 198ms
}
