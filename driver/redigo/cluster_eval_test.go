package redigo_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/driver/redigo"
	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/internal/slot"
)

// A call for a key that the slot's old master no longer has goes, after
// ASK, to the importing node as one unit: the check's questions, ASKING,
// the script. Its reply holds the questions' answers alone, in order, and
// the script's value. A user whom the node refuses ASKING gets that
// refusal as the error, with the answers, and the script does not run.
func TestCluster_Ask_QuestionsThenAskingThenTheScript(t *testing.T) {
	c := redistest.StartCluster(t, redistest.ClusterOptions{
		Extra: []string{"--user", "noasking", "on", ">secret", "~*", "&*", "+@all", "-asking"},
	})
	const s = 200
	from, to, err := c.Migrate(s)
	require.NoError(t, err)
	tag, err := slot.TagFor(s)
	require.NoError(t, err)
	call := func(key, id string) driver.Call {
		return driver.Call{Script: setEcho, Keys: []string{key}, Args: []string{id},
			Check: func(string) *driver.Check { return questions(id, 3) }}
	}
	eval := func(d *redigo.Cluster, call driver.Call) (driver.Reply, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return d.Eval(ctx, call)
	}
	open := func(opts ...redigo.Option) *redigo.Cluster {
		d, err := redigo.NewCluster(c.Addrs(), opts...)
		require.NoError(t, err)
		t.Cleanup(func() { d.Close() })
		return d
	}

	key := "asked:{" + tag + "}"
	rep, err := eval(open(), call(key, "asked"))
	require.NoError(t, err)
	assert.Equal(t, to, rep.Server)
	assert.NoError(t, wantAnswers(rep, "asked", 3))
	assert.Equal(t, "asked", rep.Value)
	// Keys of the slot, on each node: without ASKING, the importing node
	// answers a read of the key with MOVED.
	keys := func() map[string]string {
		out := map[string]string{}
		for _, node := range []string{from, to} {
			n, err := redistest.DoAt(node, "CLUSTER", "COUNTKEYSINSLOT", fmt.Sprint(s))
			require.NoError(t, err)
			out[node] = n
		}
		return out
	}
	assert.Equal(t, map[string]string{from: "0", to: "1"}, keys(), "the script ran on the importing node only")

	key = "refused:{" + tag + "}"
	rep, err = eval(open(redigo.WithAuth("noasking", "secret")), call(key, "refused"))
	var de driver.Error
	require.True(t, errors.As(err, &de), "not the node's refusal: %v", err)
	assert.Contains(t, string(de), "NOPERM")
	assert.Contains(t, string(de), "asking")
	assert.Equal(t, to, rep.Server)
	assert.NoError(t, wantAnswers(rep, "refused", 3))
	assert.Nil(t, rep.Value)
	assert.Equal(t, map[string]string{from: "0", to: "1"}, keys(), "the refused call's script ran")
}
