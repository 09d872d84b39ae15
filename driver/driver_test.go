package driver

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCheck_Commands(t *testing.T) {
	listed := [][]string{{"INFO", "server"}}
	built := [][]string{{"GET", "stamp"}}
	ask := func() [][]string { return built }
	for _, tc := range []struct {
		name  string
		check Check
		want  [][]string
	}{
		{"listed", Check{Questions: listed}, listed},
		{"built when asked for", Check{Ask: ask}, built},
		{"a list wins over a builder", Check{Questions: listed, Ask: ask}, listed},
		{"none", Check{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.check.Commands())
		})
	}
}
