package histogram

import (
	"testing"
	"time"
)

func BenchmarkHistogram_Record(b *testing.B) {
	h := new(Histogram)
	d := time.Duration(0)
	b.ReportAllocs()
	for b.Loop() {
		d = d*7 + 12345
		h.Record(d % time.Minute)
	}
}

func BenchmarkHistogram_Quantile(b *testing.B) {
	h := new(Histogram)
	for i := range 100000 {
		h.Record(time.Duration(i) * time.Microsecond)
	}
	b.ReportAllocs()
	for b.Loop() {
		h.Quantile(0.99)
	}
}
