package cluster

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReap_RemovesTheLeftoversOfDeadRunsOnly leaves a container and a
// network as a run killed before its clean-up would, next to a container of
// a run still alive, and checks that reap removes the first two only.
func TestReap_RemovesTheLeftoversOfDeadRunsOnly(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	backends, err := Backends(ctx, t)
	require.NoError(t, err)
	var d *Docker
	for _, b := range backends {
		if x, ok := b.(*Docker); ok {
			d = x
		}
	}
	if d == nil {
		t.Skipf("the docker backend is not in use (%s)", BackendEnv)
	}
	gone := exec.Command("true")
	require.NoError(t, gone.Run())
	host, _ := os.Hostname()
	labels := func(pid int) map[string]string {
		return map[string]string{labelSuite: "run", labelPID: strconv.Itoa(pid), labelHost: host}
	}
	run := func(name string, pid int) *dockertest.Resource {
		r, err := d.pool.RunWithOptions(&dockertest.RunOptions{
			Name: name, Repository: d.image.Repo, Tag: d.image.Tag,
			Cmd: []string{"redis-server", "--protected-mode", "no"}, Labels: labels(pid),
		}, func(hc *dc.HostConfig) { hc.PublishAllPorts = false })
		require.NoError(t, err)
		t.Cleanup(func() {
			d.pool.Client.RemoveContainer(dc.RemoveContainerOptions{ID: r.Container.ID, Force: true, RemoveVolumes: true})
		})
		return r
	}
	id := runID()
	dead := run("quorumlock-chaos-reaptest-dead-"+id, gone.Process.Pid)
	alive := run("quorumlock-chaos-reaptest-alive-"+id, os.Getppid())
	net, err := d.pool.CreateNetwork("quorumlock-chaos-reaptest-"+id, func(o *dc.CreateNetworkOptions) { o.Labels = labels(gone.Process.Pid) })
	require.NoError(t, err)
	t.Cleanup(func() { d.pool.Client.RemoveNetwork(net.Network.ID) })

	require.NoError(t, reap(ctx, d.pool.Client))

	_, err = d.pool.Client.InspectContainer(dead.Container.ID)
	var noSuch *dc.NoSuchContainer
	assert.ErrorAs(t, err, &noSuch, "the dead run's container is removed")
	_, err = d.pool.Client.InspectContainer(alive.Container.ID)
	assert.NoError(t, err, "the live run's container stays")
	_, err = d.pool.Client.NetworkInfo(net.Network.ID)
	assert.Error(t, err, "the dead run's network is removed")
}
