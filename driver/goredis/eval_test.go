package goredis_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/driver/goredis"
	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/redlock"
)

// clientModes are the two ways go-redis bounds a call that outlives its
// caller: by the ctx's deadline, pushed back by the adapter's grace
// (ContextTimeoutEnabled), or by the client's ReadTimeout and WriteTimeout.
var clientModes = []struct {
	name string
	opt  redis.Options
}{
	{"ctx deadlines", redis.Options{ContextTimeoutEnabled: true}},
	{"client timeouts", redis.Options{}},
}

// A connection is fresh until the lock has taken the answers of a call
// asked on it: every call on it is asked, ahead of the script. A new one,
// after the server dropped the last, is fresh again. A call on a connection
// that answered gets no questions and costs no round trip more.
func TestEval_FreshConnection_IsAskedAheadOfTheScript(t *testing.T) {
	for _, mode := range clientModes {
		t.Run(mode.name, func(t *testing.T) {
			srv := redistest.Start(t, 1, redistest.Ephemeral)
			m := wrap(t, srv[0].Addr(), mode.opt)
			s := driver.NewScript("hinted", `return ARGV[#ARGV]`)
			s.TakesHint = true
			questions := [][]string{{"INFO", "server"}, {"CLIENT", "ID"}}
			call := func() driver.Reply {
				t.Helper()
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				rep, err := driver.Eval(ctx, m, driver.Call{Script: s, Keys: []string{"k"},
					Check: func(string) *driver.Check {
						return &driver.Check{Questions: questions, Hint: "known"}
					}})
				require.NoError(t, err)
				return rep
			}

			first := call()
			require.Len(t, first.Answers, 2, "the first connection was asked")
			assert.Equal(t, "", first.Value, "the questions went ahead: no hint")

			// The server drops the connection: the call that finds it dead
			// goes again on a new one, which is asked.
			_, err := srv[0].Do("CLIENT", "KILL", "TYPE", "normal")
			require.NoError(t, err)
			second := call()
			require.Len(t, second.Answers, 2, "the new connection was asked")
			assert.Contains(t, second.Answers[0], "run_id:")
			assert.True(t, second.Lost)
			assert.NotEqual(t, first.Answers[1], second.Answers[1], "another connection answered")
			assert.Equal(t, "", second.Value)

			// The connection has answered: the next call is not asked.
			third := call()
			assert.Nil(t, third.Answers, "a connection that answered is asked again")
			assert.Equal(t, "known", third.Value)
		})
	}
}

// A call that carried the questions but whose answers never reached the
// lock leaves its connection fresh: its script failed, or its deadline came
// before its reply (which is still read, and the connection kept). The next
// call on the connection is asked; the one after it is not.
func TestEval_AnswersNotTaken_LeaveTheConnectionFresh(t *testing.T) {
	one := driver.NewScript("one", `return 1`)
	fails := driver.NewScript("fails", `return redis.error_reply('ERR failed')`)
	check := func(string) *driver.Check {
		return &driver.Check{Questions: [][]string{{"CLIENT", "ID"}}}
	}
	for _, mode := range clientModes {
		srv := redistest.Start(t, 1, redistest.Ephemeral)
		for _, tc := range []struct {
			name string
			miss func(t *testing.T, call func(*driver.Script, time.Duration) (driver.Reply, error))
		}{
			{"script fails", func(t *testing.T, call func(*driver.Script, time.Duration) (driver.Reply, error)) {
				rep, err := call(fails, 2*time.Second)
				require.Error(t, err)
				require.Nil(t, rep.Answers)
			}},
			{"deadline first", func(t *testing.T, call func(*driver.Script, time.Duration) (driver.Reply, error)) {
				require.NoError(t, srv[0].Pause())
				_, err := call(one, 50*time.Millisecond)
				assert.ErrorIs(t, err, context.DeadlineExceeded)
				time.Sleep(100 * time.Millisecond)
				require.NoError(t, srv[0].Resume())
				time.Sleep(300 * time.Millisecond) // the late reply is read
			}},
		} {
			t.Run(mode.name+"/"+tc.name, func(t *testing.T) {
				m, client := modeMaster(t, mode.opt, srv[0].Addr())
				call := func(s *driver.Script, c func(string) *driver.Check, d time.Duration) (driver.Reply, error) {
					ctx, cancel := context.WithTimeout(context.Background(), d)
					defer cancel()
					return driver.Eval(ctx, m, driver.Call{Script: s, Keys: []string{"k"}, Check: c})
				}
				// The connection is open, and no call was asked on it.
				_, err := call(one, nil, 2*time.Second)
				require.NoError(t, err)
				require.Equal(t, uint32(1), client.PoolStats().TotalConns)

				tc.miss(t, func(s *driver.Script, d time.Duration) (driver.Reply, error) { return call(s, check, d) })

				rep, err := call(one, check, 2*time.Second)
				require.NoError(t, err)
				assert.Len(t, rep.Answers, 1, "asked again: the answers did not reach the lock")
				rep, err = call(one, check, 2*time.Second)
				require.NoError(t, err)
				assert.Nil(t, rep.Answers, "the answers reached the lock: not asked again")
				assert.Equal(t, uint32(1), client.PoolStats().TotalConns, "all on one connection: %+v", client.PoolStats())
			})
		}
	}
}

// A call started from the done of a call asked on a fresh connection (as
// the lock starts a release from its acquire's done) goes without the
// questions only once that done has returned: the lock has taken the
// answers.
func TestEval_UnaskedOnlyOnceTheAnswersWereTaken(t *testing.T) {
	srv := redistest.Start(t, 1, redistest.Ephemeral)
	m := wrap(t, srv[0].Addr(), redis.Options{ContextTimeoutEnabled: true})
	one := driver.NewScript("one", `return 1`)
	check := func(string) *driver.Check { return &driver.Check{Questions: [][]string{{"CLIENT", "ID"}}} }
	type outcome struct {
		rep   driver.Reply
		err   error
		taken bool // the first call's done had returned when the second's check was read
	}
	for round := range 10 {
		// A new connection each round: the first call finds the last one
		// dead, and goes again on a fresh one.
		_, err := srv[0].Do("CLIENT", "KILL", "TYPE", "normal")
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		var taken atomic.Bool
		first := make(chan outcome, 1)
		second := make(chan outcome, 1)
		m.Start(ctx, driver.Call{Script: one, Keys: []string{"k"}, Check: check}, driver.DoneFunc(func(rep driver.Reply, err error) {
			first <- outcome{rep: rep, err: err}
			var at atomic.Bool
			m.Start(ctx, driver.Call{Script: one, Keys: []string{"k"}, Check: func(server string) *driver.Check {
				at.Store(taken.Load())
				return check(server)
			}}, driver.DoneFunc(func(rep driver.Reply, err error) {
				second <- outcome{rep, err, at.Load()}
			}))
			time.Sleep(20 * time.Millisecond) // the lock takes its time with the answers
			taken.Store(true)
		}))
		a, b := <-first, <-second
		cancel()
		require.NoError(t, a.err, "round %d", round)
		require.NotNil(t, a.rep.Answers, "round %d: the first call on a fresh connection is asked", round)
		require.NoError(t, b.err, "round %d", round)
		if b.rep.Answers == nil {
			assert.True(t, b.taken, "round %d: a call went unasked before the answers were taken", round)
		}
	}
}

// A stopped master keeps every call to its deadline, on a pooled connection
// or a new one (whose handshake is what hangs), and later calls get their
// own replies.
func TestEval_StoppedMaster_KeepsTheDeadline(t *testing.T) {
	one := driver.NewScript("one", `return 1`)
	for _, mode := range clientModes {
		for _, pooled := range []bool{true, false} {
			name := mode.name + "/new connection"
			if pooled {
				name = mode.name + "/pooled connection"
			}
			t.Run(name, func(t *testing.T) {
				srv := redistest.Start(t, 1, redistest.Ephemeral)
				m := wrap(t, srv[0].Addr(), mode.opt)
				if pooled {
					ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
					_, err := driver.Eval(ctx, m, driver.Call{Script: one, Keys: []string{"k"}})
					cancel()
					require.NoError(t, err)
				}
				require.NoError(t, srv[0].Pause())
				resumed := false
				defer func() {
					if !resumed {
						srv[0].Resume()
					}
				}()
				for _, op := range []struct {
					name string
					do   func(context.Context) error
				}{
					{"eval", func(ctx context.Context) error {
						_, err := driver.Eval(ctx, m, driver.Call{Script: one, Keys: []string{"k"}})
						return err
					}},
					{"subscribe", func(ctx context.Context) error {
						sub, err := m.Subscribe(ctx)
						if err == nil {
							sub.Close()
						}
						return err
					}},
				} {
					ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
					start := time.Now()
					err := op.do(ctx)
					cancel()
					took := time.Since(start)
					assert.Error(t, err, op.name)
					assert.Less(t, took, time.Second, "%s kept its deadline", op.name)
				}
				require.NoError(t, srv[0].Resume())
				resumed = true
				echo := driver.NewScript("echo", `return ARGV[1]`)
				for i, v := range []string{"a", "b", "c"} {
					ctx, cancel := context.WithTimeout(context.Background(), 6*time.Second)
					rep, err := driver.Eval(ctx, m, driver.Call{Script: echo, Keys: []string{"k"}, Args: []string{v}})
					cancel()
					require.NoError(t, err, "call %d", i)
					assert.Equal(t, v, rep.Value, "call %d got its own reply", i)
				}
			})
		}
	}
}

// Errors the lock acts on keep their shape through the adapter.
func TestEval_Errors(t *testing.T) {
	srv := redistest.Start(t, 1, redistest.Ephemeral, "--requirepass", "secret")
	for _, tc := range []struct {
		name string
		opt  redis.Options
		call driver.Call
		code string // the driver.Error's code, "" for another error
		is   error
	}{
		{"no password", redis.Options{}, driver.Call{Script: driver.NewScript("one", `return 1`), Keys: []string{"k"}}, "NOAUTH", nil},
		{"wrong password", redis.Options{Password: "nope"}, driver.Call{Script: driver.NewScript("one", `return 1`), Keys: []string{"k"}}, "WRONGPASS", nil},
		{"no script", redis.Options{Password: "secret"}, driver.Call{Keys: []string{"k"}}, "", redlock.ErrInvalid},
		{"empty question", redis.Options{Password: "secret"}, driver.Call{Script: driver.NewScript("one", `return 1`), Keys: []string{"k"},
			Check: func(string) *driver.Check { return &driver.Check{Questions: [][]string{{}}, Always: true} }}, "", redlock.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := wrap(t, srv[0].Addr(), tc.opt)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_, err := driver.Eval(ctx, m, tc.call)
			require.Error(t, err)
			var de driver.Error
			if tc.code != "" {
				require.True(t, errors.As(err, &de), "%T %v", err, err)
				assert.Equal(t, tc.code, de.Code())
			}
			if tc.is != nil {
				assert.ErrorIs(t, err, tc.is)
			}
		})
	}
}

// A connection the client cannot set up (the ACL user's password changed
// after the client's first connections) fails the call: go-redis leaves
// the pipeline's commands without a reply or an error then, which must not
// pass for a nil reply.
func TestEval_ConnectionSetupRefused_FailsTheCall(t *testing.T) {
	for _, mode := range clientModes {
		t.Run(mode.name, func(t *testing.T) {
			srv := redistest.Start(t, 1, redistest.Ephemeral)
			_, err := srv[0].Do("ACL", "SETUSER", "locker", "on", ">before", "~*", "&*", "+@all")
			require.NoError(t, err)
			opt := mode.opt
			opt.Username, opt.Password = "locker", "before"
			m := wrap(t, srv[0].Addr(), opt)
			one := driver.NewScript("one", `return 1`)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			rep, err := driver.Eval(ctx, m, driver.Call{Script: one, Keys: []string{"k"}})
			require.NoError(t, err)
			require.Equal(t, int64(1), rep.Value)

			_, err = srv[0].Do("ACL", "SETUSER", "locker", "resetpass", ">after")
			require.NoError(t, err)
			_, err = srv[0].Do("CLIENT", "KILL", "USER", "locker")
			require.NoError(t, err)
			rep, err = driver.Eval(ctx, m, driver.Call{Script: one, Keys: []string{"k"}})
			var de driver.Error
			require.True(t, errors.As(err, &de), "got %#v, %v", rep.Value, err)
			assert.Equal(t, "WRONGPASS", de.Code())
		})
	}
}

// A fresh client's first connections, set up at once by calls and a
// subscription, race on nothing: a RESP3 client writes its options as the
// first ones come up (see readiness), a RESP2 client never does.
func TestEval_FirstConnectionsAtOnce(t *testing.T) {
	srv := redistest.Start(t, 1, redistest.Ephemeral)
	one := driver.NewScript("one", `return 1`)
	for _, protocol := range []int{3, 2} {
		t.Run(fmt.Sprint("RESP", protocol), func(t *testing.T) {
			for round := range 3 {
				m := wrap(t, srv[0].Addr(), redis.Options{Protocol: protocol, ContextTimeoutEnabled: true})
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				errs := make(chan error, 9)
				for range 8 {
					go func() {
						_, err := driver.Eval(ctx, m, driver.Call{Script: one, Keys: []string{"k"}})
						errs <- err
					}()
				}
				go func() {
					sub, err := m.Subscribe(ctx)
					if err == nil {
						err = sub.Close()
					}
					errs <- err
				}()
				for range 9 {
					assert.NoError(t, <-errs, "round %d", round)
				}
				cancel()
			}
		})
	}
}

// A reply that comes after the caller's deadline, within the grace, is
// still read, and its connection kept rather than dropped with its setup,
// which a new one would pay for again.
func TestEval_LateReply_KeepsTheConnection(t *testing.T) {
	one := driver.NewScript("one", `return 1`)
	for _, mode := range clientModes {
		t.Run(mode.name, func(t *testing.T) {
			srv := redistest.Start(t, 1, redistest.Ephemeral)
			m, client := modeMaster(t, mode.opt, srv[0].Addr())
			call := func(d time.Duration) (driver.Reply, error) {
				ctx, cancel := context.WithTimeout(context.Background(), d)
				defer cancel()
				return m.Eval(ctx, driver.Call{Script: one, Keys: []string{"k"}})
			}
			_, err := call(2 * time.Second)
			require.NoError(t, err)
			require.Equal(t, uint32(1), client.PoolStats().TotalConns)

			require.NoError(t, srv[0].Pause())
			_, err = call(50 * time.Millisecond)
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			time.Sleep(100 * time.Millisecond)
			require.NoError(t, srv[0].Resume())
			time.Sleep(300 * time.Millisecond) // the late reply is read
			next, err := call(2 * time.Second)
			require.NoError(t, err)
			assert.Equal(t, int64(1), next.Value)
			assert.Equal(t, uint32(1), client.PoolStats().TotalConns, "%+v", client.PoolStats())
		})
	}
}

// A master that lost its scripts gets the source on the connection the
// questions went on, and the answers come back with the reply.
func TestEval_ScriptSourceAfterTheQuestions(t *testing.T) {
	srv := redistest.Start(t, 1, redistest.Ephemeral)
	m := wrap(t, srv[0].Addr(), redis.Options{ContextTimeoutEnabled: true})
	echo := driver.NewScript("echo", `return ARGV[1]`)
	for i := range 3 {
		_, err := srv[0].Do("SCRIPT", "FLUSH")
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		rep, err := driver.Eval(ctx, m, driver.Call{Script: echo, Keys: []string{"k"}, Args: []string{fmt.Sprint(i)},
			Check: func(string) *driver.Check {
				return &driver.Check{Questions: [][]string{{"CLIENT", "ID"}}, Always: true}
			}})
		cancel()
		require.NoError(t, err, "try %d", i)
		assert.Equal(t, fmt.Sprint(i), rep.Value)
		require.Len(t, rep.Answers, 1)
		assert.IsType(t, int64(0), rep.Answers[0])
	}
}

// modeMaster returns the adapter over a client of opt's mode at addr, both
// closed with the test.
func modeMaster(t *testing.T, opt redis.Options, addr string) (*goredis.Master, *redis.Client) {
	t.Helper()
	opt.Addr = addr
	client := redis.NewClient(&opt)
	t.Cleanup(func() { client.Close() })
	m, err := goredis.New(client)
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	return m, client
}
