package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParse_KeepsTheModulesBlocksThatRan(t *testing.T) {
	prof := []byte(`mode: atomic
github.com/quorumlock/quorumlock/redlock/lock.go:10.2,12.3 2 1
github.com/quorumlock/quorumlock/redlock/lock.go:20.2,21.3 1 0
github.com/quorumlock/quorumlock/redlock/lock.go:30.2,31.3 1 7
github.com/quorumlock/quorumlock/clock/clock.go:5.1,6.2 1 3
github.com/other/module/x.go:1.1,2.2 1 1
`)
	ran, err := parse(prof)
	require.NoError(t, err)
	assert.Equal(t, map[string][]int{"redlock/lock.go": {10, 30}, "clock/clock.go": {5}}, ran)

	_, err = parse([]byte("github.com/quorumlock/quorumlock/a.go:x.1,2.2 1 1\n"))
	assert.Error(t, err)
}

func TestFuncsAt_NamesFunctionsAndMethodsHoldingTheLines(t *testing.T) {
	src := `package p

type T[V any] struct{}

func a() {
	_ = 1
}

func (t *T[V]) b() {
	_ = 2
}

func (T[V]) c() {}

func d() {}
`
	path := filepath.Join(t.TempDir(), "p.go")
	require.NoError(t, os.WriteFile(path, []byte(src), 0o644))
	for _, tc := range []struct {
		lines []int
		want  []string
	}{
		{[]int{6}, []string{"a"}},
		{[]int{10, 6, 10}, []string{"a", "T.b"}},
		{[]int{13}, []string{"T.c"}},
		{[]int{3}, nil},
	} {
		got, err := funcsAt(path, tc.lines)
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, "lines %v", tc.lines)
	}
}

func TestBeyond(t *testing.T) {
	base := []file{{path: "a.go"}, {path: "b.go"}}
	assert.Equal(t, []string{"c.go"}, beyond([]file{{path: "a.go"}, {path: "c.go"}}, base))
	assert.Empty(t, beyond([]file{{path: "b.go"}}, base))
}
