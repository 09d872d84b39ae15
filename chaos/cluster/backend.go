package cluster

import (
	"context"
	"fmt"
	"os"
	"testing"
)

// BackendEnv names the environment variable that chooses the backends:
// "docker", "process", "all" (every backend available: process, and docker
// when an engine answers), or unset for docker when an engine answers and
// process otherwise.
const BackendEnv = "REDLOCK_CHAOS_BACKEND"

// Backend starts clusters.
type Backend interface {
	// Name returns "docker" or "process".
	Name() string
	// Start starts a cluster for spec and registers its removal with
	// tb.Cleanup, so it is removed even when the test fails.
	Start(ctx context.Context, tb testing.TB, spec Spec) (Cluster, error)
}

// Backends returns the backends that BackendEnv asks for, ready to use.
// Asking for docker explicitly when no engine answers is an error, not a
// skip.
func Backends(ctx context.Context, tb testing.TB) ([]Backend, error) {
	choice := os.Getenv(BackendEnv)
	switch choice {
	case "process":
		return []Backend{Process{}}, nil
	case "docker":
		d, err := NewDocker(ctx, tb)
		if err != nil {
			return nil, fmt.Errorf("%s=docker: %w", BackendEnv, err)
		}
		return []Backend{d}, nil
	case "", "all":
		p, err := pingDocker(ctx)
		if err != nil {
			tb.Logf("cluster: no docker engine answers (%v); using the process backend only", err)
			return []Backend{Process{}}, nil
		}
		p.Client.HTTPClient.CloseIdleConnections()
		d, err := NewDocker(ctx, tb)
		if err != nil {
			return nil, err
		}
		if choice == "" {
			return []Backend{d}, nil
		}
		return []Backend{Process{}, d}, nil
	}
	return nil, fmt.Errorf("%s=%q: want docker, process or all", BackendEnv, choice)
}
