package scripts

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// A remembered rendering is the duration's own, whichever durations share
// its slot and in whatever order they come.
func TestSet_MSRemembers(t *testing.T) {
	s := New()
	ds := []time.Duration{10 * time.Second, 25 * time.Second, time.Millisecond, 4 * time.Millisecond, 8 * time.Millisecond, time.Hour, 0}
	for range 3 {
		for _, d := range ds {
			assert.Equal(t, strconv.FormatInt(d.Milliseconds(), 10), s.ms(d), "%v", d)
		}
	}
	first := s.ms(10 * time.Second)
	assert.Equal(t, 0, int(testing.AllocsPerRun(10, func() { _ = s.ms(10 * time.Second) })), "a duration asked for again costs nothing")
	assert.Equal(t, "10000", first)
}
