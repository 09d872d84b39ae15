package bench

import (
	"bufio"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// echoServer answers every line with the same line.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func TestDelayProxy_RepliesArriveLateAndInOrder(t *testing.T) {
	const delay = 20 * time.Millisecond
	p, err := NewDelayProxy(echoServer(t), delay)
	require.NoError(t, err)
	defer p.Close()

	c, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(5*time.Second)))
	r := bufio.NewReader(c)

	start := time.Now()
	_, err = c.Write([]byte("a\n"))
	require.NoError(t, err)
	line, err := r.ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "a\n", line)
	assert.GreaterOrEqual(t, time.Since(start), delay)

	// Pipelined requests are delayed together, not one after another.
	start = time.Now()
	for _, s := range []string{"1\n", "2\n", "3\n", "4\n", "5\n"} {
		_, err = c.Write([]byte(s))
		require.NoError(t, err)
	}
	var got string
	for range 5 {
		line, err := r.ReadString('\n')
		require.NoError(t, err)
		got += line
	}
	assert.Equal(t, "1\n2\n3\n4\n5\n", got)
	took := time.Since(start)
	assert.GreaterOrEqual(t, took, delay)
	assert.Less(t, took, 4*delay, "five pipelined replies took %v", took)
}

func TestDelayProxy_Close_EndsOpenConnections(t *testing.T) {
	p, err := NewDelayProxy(echoServer(t), time.Millisecond)
	require.NoError(t, err)
	c, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write([]byte("x\n"))
	require.NoError(t, err)
	_, err = bufio.NewReader(c).ReadString('\n')
	require.NoError(t, err)

	require.NoError(t, p.Close())
	require.NoError(t, c.SetReadDeadline(time.Now().Add(2*time.Second)))
	_, err = c.Read(make([]byte, 1))
	assert.Error(t, err, "the proxy closed its side")
}

func TestNewDelayProxy_NegativeDelay_IsAnError(t *testing.T) {
	_, err := NewDelayProxy("127.0.0.1:1", -time.Second)
	assert.Error(t, err)
}

// A sub-millisecond delay is kept to well under a millisecond: a proxy
// that slept with time.Sleep would add about a millisecond instead.
func TestDelayProxy_SubMillisecondDelayIsKept(t *testing.T) {
	const delay, trips = 250 * time.Microsecond, 200
	p, err := NewDelayProxy(echoServer(t), delay)
	require.NoError(t, err)
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(30*time.Second)))
	r := bufio.NewReader(c)
	took := make([]time.Duration, 0, trips)
	for range trips {
		start := time.Now()
		_, err := c.Write([]byte("x\n"))
		require.NoError(t, err)
		_, err = r.ReadString('\n')
		require.NoError(t, err)
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	t.Logf("round trip through a %v proxy: min %v, p50 %v, p90 %v", delay, took[0], took[trips/2], took[trips*9/10])
	assert.GreaterOrEqual(t, took[0], delay-earlyBy, "a reply came before its delay")
	assert.Less(t, took[trips/2], delay+750*time.Microsecond, "the median round trip is rounded up")
}
