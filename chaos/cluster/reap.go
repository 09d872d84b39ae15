package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"

	dc "github.com/ory/dockertest/v3/docker"
)

// reap removes the containers and networks of suite runs on this host whose
// process is gone: a run that was killed, or timed out, before its clean-up
// ran. Runs still alive, here or on other hosts sharing the engine, are
// left alone.
func reap(ctx context.Context, client *dc.Client) error {
	host, _ := os.Hostname()
	dead := func(labels map[string]string) bool {
		if labels[labelHost] != host {
			return false
		}
		pid, err := strconv.Atoi(labels[labelPID])
		if err != nil || pid <= 0 || pid == os.Getpid() {
			return false
		}
		return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
	}
	var errs []error
	cs, err := client.ListContainers(dc.ListContainersOptions{
		All:     true,
		Filters: map[string][]string{"label": {labelSuite + "=run"}},
		Context: ctx,
	})
	if err != nil {
		return fmt.Errorf("list containers: %w", err)
	}
	for _, c := range cs {
		if dead(c.Labels) {
			if err := client.RemoveContainer(dc.RemoveContainerOptions{ID: c.ID, Force: true, RemoveVolumes: true, Context: ctx}); err != nil {
				errs = append(errs, err)
			}
		}
	}
	ns, err := client.FilteredListNetworks(dc.NetworkFilterOpts{"label": {labelSuite + "=run": true}})
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("list networks: %w", err))...)
	}
	for _, n := range ns {
		if dead(n.Labels) {
			if err := client.RemoveNetwork(n.ID); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
