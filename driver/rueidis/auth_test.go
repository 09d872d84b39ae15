package rueidisdriver_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/internal/redistest"
)

// A master that asks for a password the client gets wrong, or does not
// give, fails the setup of every connection the client opens (HELLO). The
// calls fail with its reply, as a driver.Error, NOAUTH saying where the
// password goes; and calls back to back for 1 s, each with a 50 ms
// deadline, take a connection a few times, backing off, not at every call.
func TestRefused_Password(t *testing.T) {
	const password, calling, deadline = "right-Pw1", time.Second, 50 * time.Millisecond
	for _, tc := range []struct {
		name, password, code, says string
	}{
		{"wrong", "nope-Pw9", "WRONGPASS", "WRONGPASS"},
		{"missing", "", "NOAUTH", "give it in the client's options"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t, 1, redistest.Ephemeral)[0]
			_, err := srv.Do("CONFIG", "SET", "requirepass", password)
			require.NoError(t, err)
			t.Cleanup(func() { srv.DoAs(password, "CONFIG", "SET", "requirepass", "") })
			received := func() int {
				n, err := srv.ConnectionsReceived(password)
				require.NoError(t, err)
				return n
			}
			before := received()
			// ForceSingleClient: rueidis builds the client even though its
			// first connection fails.
			client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, Password: tc.password, ForceSingleClient: true})
			require.Error(t, err)
			require.NotNil(t, client)
			t.Cleanup(client.Close)
			m := newMaster(t, client)
			s := driver.NewScript("echo", `return ARGV[1]`)
			calls, refused := 0, 0
			for end := time.Now().Add(calling); time.Now().Before(end); calls++ {
				ctx, cancel := context.WithTimeout(context.Background(), deadline)
				_, err := m.Eval(ctx, driver.Call{Script: s, Keys: []string{"k"}, Args: []string{"x"}})
				cancel()
				if errors.Is(err, context.DeadlineExceeded) {
					continue // it waited for a connection being opened
				}
				var de driver.Error
				require.True(t, errors.As(err, &de), "call %d: %T %v", calls, err, err)
				require.Equal(t, tc.code, de.Code(), "%v", err)
				require.Contains(t, err.Error(), tc.says)
				if tc.password != "" {
					require.NotContains(t, err.Error(), tc.password)
				}
				refused++
			}
			opened := received() - before - 2 // less the one asking, and the client's own first
			t.Logf("%d connections opened by %d calls over %v, %d refused", opened, calls, calling, refused)
			assert.Positive(t, refused)
			assert.LessOrEqual(t, opened, 6, "a refusing master was dialled at every call")
		})
	}
}
