package redlock

import (
	"context"
	"log/slog"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/internal/redistest"
)

// noInfoUser is an ACL user that may do everything but INFO.
var noInfoUser = []string{"--user", "app", "on", ">app-secret", "~*", "&*", "+@all", "-info"}

// asNoInfoUser returns the servers' addresses as URLs that log in as
// noInfoUser.
func asNoInfoUser(srv ...*redistest.Server) []string {
	out := make([]string, len(srv))
	for i, s := range srv {
		out[i] = (&url.URL{Scheme: "redis", User: url.UserPassword("app", "app-secret"), Host: s.Addr()}).String()
	}
	return out
}

// A master whose INFO is denied to the client's user does not vote: the
// guard cannot see it restart. It is warned about once, and its restart
// changes nothing. WithTrustUnreadable lets it vote, with the same
// warning, and again after the master restarts: a restart it could not see.
func TestIntegration_InfoDenied_DoesNotVote(t *testing.T) {
	for _, trust := range []bool{false, true} {
		name := "default"
		if trust {
			name = "WithTrustUnreadable"
		}
		t.Run(name, func(t *testing.T) {
			srv := redistest.Start(t, 1, redistest.Ephemeral, noInfoUser...)
			l := &logs{}
			opts := []Option{WithLogger(slog.New(l))}
			if trust {
				opts = append(opts, WithTrustUnreadable())
			}
			c := clientAt(t, asNoInfoUser(srv...), opts...)
			ctx := context.Background()
			attempts := func() {
				t.Helper()
				for range 3 {
					lk, err := c.TryLock(ctx, "k", time.Second)
					if !trust {
						require.ErrorIs(t, err, ErrNotObtained)
						continue
					}
					require.NoError(t, err)
					require.NoError(t, lk.Release(ctx))
				}
			}
			attempts()
			st, err := c.Inspect(ctx, "k")
			require.NoError(t, err)
			assert.Equal(t, !trust, st.Nodes[0].Quarantined)
			if !trust {
				assert.Contains(t, st.Nodes[0].Distrust, "cannot be read")
			}
			w := l.warnings(srv[0].Addr())
			require.Len(t, w, 1, "one warning: %v", w)
			assert.Contains(t, w[0], "NOPERM")

			require.NoError(t, srv[0].Kill())
			require.NoError(t, srv[0].Restart(redistest.Ephemeral))
			attempts()
			w = l.warnings(srv[0].Addr())
			if trust {
				require.Len(t, w, 2, "warned again after the restart: %v", w)
			} else {
				require.Len(t, w, 1, "not warned again: it votes neither before nor after: %v", w)
			}
		})
	}
}

// The shape of a restart the guard cannot see: three masters whose INFO is
// denied to the client's user. A holds the lock on masters 0 and 1; master
// 1 restarts empty; B, which reaches masters 1 and 2, asks for it. By
// default these masters do not vote, and nobody gets the lock. Trusting
// them (the control) gives two holders.
func TestIntegration_InfoDenied_RestartEmpty(t *testing.T) {
	for _, trust := range []bool{false, true} {
		name := "default: no two holders"
		if trust {
			name = "WithTrustUnreadable: two holders, the control"
		}
		t.Run(name, func(t *testing.T) {
			srv := redistest.Start(t, 3, redistest.Ephemeral, noInfoUser...)
			urls := asNoInfoUser(srv...)
			var opts []Option
			if trust {
				opts = append(opts, WithTrustUnreadable())
			}
			a := clientAt(t, []string{urls[0], urls[1], deadAddr(t)}, opts...)
			b := clientAt(t, []string{deadAddr(t), urls[1], urls[2]}, opts...)
			ctx := context.Background()
			la, errA := a.TryLock(ctx, "k", 10*time.Second)
			require.NoError(t, srv[1].Kill())
			require.NoError(t, srv[1].Restart(redistest.Ephemeral))
			_, errB := b.TryLock(ctx, "k", 10*time.Second)
			if trust {
				require.NoError(t, errA)
				require.NoError(t, errB, "the control: the restarted master grants B the lock")
				assert.Positive(t, la.Validity(), "while A still holds it")
				return
			}
			assert.False(t, errA == nil && errB == nil, "two holders")
			require.ErrorIs(t, errA, ErrNotObtained)
			require.ErrorIs(t, errB, ErrNotObtained)
		})
	}
}
