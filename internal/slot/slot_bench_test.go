package slot

import "testing"

func BenchmarkOf(b *testing.B) {
	for _, key := range []string{"quorumlock:orders:42", "quorumlock:fence:{orders:42}"} {
		b.Run(key, func(b *testing.B) {
			for b.Loop() {
				Of(key)
			}
		})
	}
}

func BenchmarkTagFor(b *testing.B) {
	s := 0
	for b.Loop() {
		TagFor(s)
		s = (s + 7919) % Count
	}
}
