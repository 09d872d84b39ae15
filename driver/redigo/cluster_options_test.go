package redigo

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A cluster's node drivers take the cluster's settings, the number of
// shared connections among them: WithPipelineConns given to NewCluster, or
// the URL's pipeline_conns, reach every node.
func TestNewCluster_NodesTakeTheSettings(t *testing.T) {
	for _, tc := range []struct {
		name  string
		seed  string
		opts  []Option
		conns int
	}{
		{"default", "127.0.0.1:7000", nil, DefaultPipelineConns},
		{"3 connections", "127.0.0.1:7000", []Option{WithPipelineConns(3)}, 3},
		{"3 connections by URL", "redis://127.0.0.1:7000?pipeline_conns=3", nil, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewCluster([]string{tc.seed}, tc.opts...)
			require.NoError(t, err)
			defer c.Close()
			cfg := config{}
			for _, o := range c.nodeOpts {
				o.apply(&cfg)
			}
			assert.Equal(t, tc.conns, cfg.pipeConns)
		})
	}
}
