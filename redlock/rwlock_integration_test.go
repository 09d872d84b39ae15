package redlock

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/internal/redistest"
)

// Readers of two clients share the key; a writer excludes them, and they
// it; nothing is left on the masters once all are released. On Redis 7
// and 6.0.
func TestIntegration_RWLock_ReadersShareAWriterExcludes(t *testing.T) {
	for _, v := range queueVersions {
		t.Run(v.name, func(t *testing.T) { readersShareAWriterExcludes(t, v.start(t, 5)) })
	}
}

func readersShareAWriterExcludes(t *testing.T, srv []*redistest.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := client(t, srv)
	a, err := c.RWLock("doc")
	require.NoError(t, err)
	b, err := client(t, srv).RWLock("doc")
	require.NoError(t, err)

	r1, err := a.TryRLock(ctx, 2*time.Second)
	require.NoError(t, err)
	r2, err := b.TryRLock(ctx, 2*time.Second, WithAutoExtend())
	require.NoError(t, err, "readers of two clients share the key")
	_, err = b.TryLock(ctx, 2*time.Second)
	require.ErrorIs(t, err, ErrNotObtained, "a writer is refused while readers hold")
	sem, err := c.Semaphore("doc", 2)
	require.NoError(t, err)
	_, err = sem.TryAcquire(ctx, 2*time.Second)
	var pe *PermitsError
	require.ErrorAs(t, err, &pe, "a semaphore's permit is refused while readers hold")
	assert.Zero(t, pe.Recorded)
	require.ErrorIs(t, err, ErrInvalid)
	assert.Regexp(t, `^redlock: key "doc" holds an RWLock's readers on master [^ ]+, not a semaphore's permits`, err.Error())
	assert.LessOrEqual(t, len(err.Error()), 200)
	require.NoError(t, r1.Release(ctx))
	require.NoError(t, r2.Release(ctx))

	w, err := a.TryLock(ctx, 2*time.Second)
	require.NoError(t, err)
	_, err = b.TryRLock(ctx, 2*time.Second)
	require.ErrorIs(t, err, ErrNotObtained, "a reader is refused while a writer holds")
	require.NoError(t, w.Release(ctx))
	for _, s := range srv {
		assert.Eventually(t, func() bool {
			n, err := redis.Int(do(t, s, "EXISTS", stored("doc"), suiteNames().Of("doc").Permits()), nil)
			return err == nil && n == 0
		},
			2*time.Second, 5*time.Millisecond, "%s keeps a hold", s.Addr())
	}
}

// A writer waiting for the readers to drain stops new readers, and takes
// the key as soon as the last reader releases it: the release announces it.
// On Redis 7 and 6.0.
func TestIntegration_RWLock_WaitingWriterStopsNewReaders(t *testing.T) {
	for _, v := range queueVersions {
		t.Run(v.name, func(t *testing.T) { waitingWriterStopsNewReaders(t, v.start(t, 5)) })
	}
}

func waitingWriterStopsNewReaders(t *testing.T, srv []*redistest.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	a, err := client(t, srv).RWLock("doc")
	require.NoError(t, err)
	// The writer renews its place every 20s: only the release's
	// announcement wakes it in time.
	b, err := client(t, srv, WithQueueLease(time.Minute)).RWLock("doc")
	require.NoError(t, err)

	r, err := a.TryRLock(ctx, 10*time.Second)
	require.NoError(t, err)
	got := make(chan *Lock, 1)
	go func() {
		w, err := b.Lock(ctx, 10*time.Second)
		assert.NoError(t, err)
		got <- w
	}()
	waitQueued(t, "doc", 1, srv)
	_, err = a.TryRLock(ctx, 10*time.Second)
	require.ErrorIs(t, err, ErrNotObtained, "a new reader is refused while a writer waits")
	readerCtx, stop := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = a.RLock(readerCtx, 10*time.Second)
	stop()
	require.ErrorIs(t, err, ErrNotObtained, "a waiting reader too")

	released := time.Now()
	require.NoError(t, r.Release(ctx))
	w := <-got
	require.NotNil(t, w)
	waited := time.Since(released)
	t.Logf("the writer took the key %v after the last reader's release", waited)
	assert.Less(t, waited, time.Second, "woken by the release, not by its TTL or backoff")
	assert.Greater(t, w.Fence(), r.Fence())
	require.NoError(t, w.Release(ctx))
	r, err = a.TryRLock(ctx, time.Second)
	require.NoError(t, err, "nobody waits: readers are granted again")
	require.NoError(t, r.Release(ctx))
}

// Readers and writers of two clients never overlap, and fences order them,
// through many rounds while a minority master is SIGSTOPped now and then
// and one is killed with SIGKILL and restarted (every write fsynced, so it
// loses nothing). Bounded: a count of rounds, within a minute.
func TestIntegration_RWLock_ReadersAndWritersNeverOverlap_ThroughFaults(t *testing.T) {
	srv := mastersWith(t, 5, redistest.FsyncAlways)
	opts := []Option{WithRestartGuard(time.Minute), WithNodeTimeout(20 * time.Millisecond), WithLogger(quiet())}
	var rws []*RWLock
	for range 2 {
		c, err := NewFromAddrs(urls(srv), suite(opts...)()...)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		rw, err := c.RWLock("shared")
		require.NoError(t, err)
		rws = append(rws, rw)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	stop := make(chan struct{})
	chaosDone := make(chan struct{})
	var pauses, kills atomic.Int32
	go func() { // one master down at a time: a SIGSTOP, or once a SIGKILL and restart
		defer close(chaosDone)
		rng := rand.New(rand.NewPCG(3, 5))
		for round := 0; round < 2000; round++ {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(20+rng.IntN(30)) * time.Millisecond):
			}
			s := srv[rng.IntN(5)]
			if round == 10 {
				if s.Kill() == nil && s.Restart(redistest.FsyncAlways) == nil {
					kills.Add(1)
				}
				continue
			}
			if s.Pause() == nil {
				pauses.Add(1)
			}
			time.Sleep(time.Duration(10+rng.IntN(40)) * time.Millisecond)
			s.Resume()
		}
	}()

	const rounds = 150
	var readers, writers, readRounds, writeRounds, shared atomic.Int32
	var mu sync.Mutex
	var lastWrite, lastRead int64 // fences of the last write and read holds ended
	hold := func() { time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond) }
	var wg sync.WaitGroup
	for i := range 6 {
		rw := rws[i%2]
		write := i < 2
		wg.Go(func() {
			for range rounds {
				if write {
					l, err := rw.Lock(ctx, 2*time.Second)
					if !assert.NoError(t, err) {
						return
					}
					w := writers.Add(1)
					assert.Equal(t, int32(1), w, "two writers at once")
					assert.Zero(t, readers.Load(), "a writer beside readers")
					mu.Lock()
					assert.Greater(t, l.Fence(), max(lastWrite, lastRead), "a writer's fence is above every hold ended before it")
					mu.Unlock()
					hold()
					mu.Lock()
					lastWrite = max(lastWrite, l.Fence())
					mu.Unlock()
					writers.Add(-1)
					writeRounds.Add(1)
					l.Release(context.Background()) // may report a master just killed; overlap is what is checked
					continue
				}
				l, err := rw.RLock(ctx, 2*time.Second)
				if !assert.NoError(t, err) {
					return
				}
				if readers.Add(1) > 1 {
					shared.Add(1)
				}
				assert.Zero(t, writers.Load(), "a reader beside a writer")
				mu.Lock()
				assert.Greater(t, l.Fence(), lastWrite, "a reader's fence is above every writer's before it")
				mu.Unlock()
				hold()
				mu.Lock()
				lastRead = max(lastRead, l.Fence())
				mu.Unlock()
				readers.Add(-1)
				readRounds.Add(1)
				l.Release(context.Background())
			}
		})
	}
	wg.Wait()
	close(stop)
	<-chaosDone
	for _, s := range srv {
		s.Resume()
	}
	t.Logf("%d read holds (%d beside another reader) and %d write holds; %d pauses, %d kills",
		readRounds.Load(), shared.Load(), writeRounds.Load(), pauses.Load(), kills.Load())
	assert.Equal(t, int32(4*rounds), readRounds.Load())
	assert.Equal(t, int32(2*rounds), writeRounds.Load())
	assert.Positive(t, shared.Load(), "readers shared the key")
	assert.Positive(t, pauses.Load())
	assert.Equal(t, int32(1), kills.Load())
}

// A read hold kept by WithAutoExtend notices its loss, as a lock does:
// with its members gone from every master (an operator deleted the key),
// Done closes within its validity and Err is ErrLockLost.
func TestIntegration_RWLock_ReaderNoticesItsLoss(t *testing.T) {
	srv := masters(t, 5)
	rw, err := client(t, srv).RWLock("doc")
	require.NoError(t, err)
	start := time.Now()
	r, err := rw.TryRLock(context.Background(), time.Second, WithAutoExtend())
	require.NoError(t, err)
	for _, s := range srv {
		require.Eventually(t, func() bool {
			n, err := redis.Int(do(t, s, "EXISTS", stored("doc")), nil)
			return err == nil && n == 1
		}, 2*time.Second, time.Millisecond, "%s never held the reader", s.Addr())
		do(t, s, "DEL", stored("doc"))
	}
	select {
	case <-r.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the loss went unnoticed")
	}
	require.ErrorIs(t, r.Err(), ErrLockLost)
	t.Logf("loss noticed %v after the start; the validity ended at %v", time.Since(start), r.Until().Sub(start))
	assert.True(t, time.Now().Before(r.Until()), "the loss was noticed within the validity")
}
