package redigo_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/driver/redigo"
	"github.com/quorumlock/quorumlock/internal/redistest"
)

func TestOpen_ChoosesTheDriverByScheme(t *testing.T) {
	for _, tc := range []struct {
		addr    string
		cluster bool
		name    string // Addr of the driver
	}{
		{"127.0.0.1:7000", false, "127.0.0.1:7000"},
		{"redis://127.0.0.1:7000", false, "127.0.0.1:7000"},
		{"redis+cluster://127.0.0.1:7000", true, "127.0.0.1:7000"},
		{"redis+cluster://127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002", true, "127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002"},
		{"redis+cluster://u:p@127.0.0.1:7000,127.0.0.1:7001?read_timeout=2s", true, "127.0.0.1:7000,127.0.0.1:7001"},
		{"REDIS+CLUSTER://127.0.0.1:7000,127.0.0.1:7000", true, "127.0.0.1:7000"},
		{"rediss+cluster://10.0.0.1:7000,10.0.0.2:7000?tls_server_name=redis", true, "10.0.0.1:7000,10.0.0.2:7000"},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			d, err := redigo.Open(tc.addr)
			require.NoError(t, err)
			defer d.Close()
			_, isCluster := d.(*redigo.Cluster)
			assert.Equal(t, tc.cluster, isCluster)
			assert.Equal(t, tc.name, d.Addr())
		})
	}
}

func TestOpen_BadClusterAddresses(t *testing.T) {
	for _, tc := range []struct {
		addr, want string
	}{
		{"redis+cluster://", "seed 0 of the cluster has no host"},
		{"redis+cluster://127.0.0.1:7000,,127.0.0.1:7001", "seed 1 of the cluster has no host"},
		{"redis+cluster://127.0.0.1:7000/1", "only database 0"},
		{"redis+cluster://127.0.0.1:7000?db=2", "only database 0"},
		{"redis+cluster://127.0.0.1:7000?tls_ca_file=/x", "needs a rediss:// URL"},
		{"redis+cluster://127.0.0.1:70000", "not in 1-65535"},
		{"http+cluster://127.0.0.1:7000", "not redis+cluster or rediss+cluster"},
		{"redis+cluster://user:s3cret@127.0.0.1:7000,:x", "xxxxx@"},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			_, err := redigo.Open(tc.addr)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), "s3cret")
		})
	}
}

// A cluster URL reaches a real cluster, whatever seed answers first.
func TestOpen_ClusterURLRunsScripts(t *testing.T) {
	c := redistest.StartCluster(t, redistest.ClusterOptions{})
	addrs := c.Addrs()
	url := "redis+cluster://127.0.0.1:1," + addrs[1] + "," + addrs[2] + "?dial_timeout=200ms"
	d, err := redigo.Open(url)
	require.NoError(t, err)
	defer d.Close()
	s := driver.NewScript("set", `redis.call('SET', KEYS[1], ARGV[1]); return 1`)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, key := range []string{"a", "b", "c", "d"} {
		rep, err := d.Eval(ctx, driver.Call{Script: s, Keys: []string{key}, Args: []string{"v"}})
		require.NoError(t, err, key)
		v, err := redistest.DoAt(rep.Server, "GET", key)
		require.NoError(t, err, "%s is on %s", key, rep.Server)
		assert.Equal(t, "v", v)
	}
}
