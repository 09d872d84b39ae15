package redigo_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/driver/redigo"
)

// BenchmarkEval runs a small script from 1 and from 64 goroutines, on one
// master: on one shared connection and on four; an op is one Eval. reads/op and writes/op are the process's read and write system
// calls.
func BenchmarkEval(b *testing.B) {
	srv := startRedis(b).Addr()
	modes := []struct {
		name string
		opts []redigo.Option
	}{
		{"pipelined", nil},
		{"pipelined-4conns", []redigo.Option{redigo.WithPipelineConns(4)}},
	}
	for _, m := range modes {
		for _, par := range []int{1, 64} {
			p, err := redigo.New(srv, m.opts...)
			require.NoError(b, err)
			b.Run(fmt.Sprintf("mode=%s/goroutines=%d", m.name, par), func(b *testing.B) {
				call := echoCall("x")
				b.ReportAllocs()
				eval := func() bool {
					ctx, cancel := context.WithTimeout(context.Background(), time.Second)
					defer cancel()
					_, err := p.Eval(ctx, call)
					if err != nil {
						b.Error(err)
					}
					return err == nil
				}
				r0, w0 := ioSyscalls(b)
				if par == 1 {
					for range b.N {
						if !eval() {
							break
						}
					}
				} else {
					// RunParallel runs GOMAXPROCS × parallelism goroutines.
					b.SetParallelism(max(par/runtime.GOMAXPROCS(0), 1))
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() && eval() {
						}
					})
				}
				r1, w1 := ioSyscalls(b)
				b.ReportMetric(float64(r1-r0)/float64(b.N), "reads/op")
				b.ReportMetric(float64(w1-w0)/float64(b.N), "writes/op")
			})
			p.Close()
		}
	}
}

// ioSyscalls returns this process's read and write system calls so far
// (/proc/self/io).
func ioSyscalls(b *testing.B) (reads, writes int) {
	b.Helper()
	data, err := os.ReadFile("/proc/self/io")
	if err != nil {
		b.Skip("no /proc/self/io")
	}
	for _, line := range strings.Split(string(data), "\n") {
		k, v, _ := strings.Cut(line, ": ")
		n, _ := strconv.Atoi(v)
		switch k {
		case "syscr":
			reads = n
		case "syscw":
			writes = n
		}
	}
	return reads, writes
}
