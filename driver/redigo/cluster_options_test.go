package redigo

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A cluster's node pools take the cluster's settings, the mode of Eval
// among them: WithPipeline and WithPipelineConns given to NewCluster, or the
// URL's pipeline parameters, reach every node.
func TestNewCluster_NodesTakeTheMode(t *testing.T) {
	for _, tc := range []struct {
		name      string
		seed      string
		opts      []Option
		pipelined bool
		conns     int
	}{
		{"default", "127.0.0.1:7000", nil, DefaultPipeline, DefaultPipelineConns},
		{"pooled", "127.0.0.1:7000", []Option{WithPipeline(false)}, false, DefaultPipelineConns},
		{"pipelined on 3", "127.0.0.1:7000", []Option{WithPipeline(true), WithPipelineConns(3)}, true, 3},
		{"pooled by URL", "redis://127.0.0.1:7000?pipeline=false", nil, false, DefaultPipelineConns},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewCluster([]string{tc.seed}, tc.opts...)
			require.NoError(t, err)
			defer c.Close()
			cfg := config{}
			for _, o := range c.nodeOpts {
				o.apply(&cfg)
			}
			assert.Equal(t, tc.pipelined, cfg.pipeline)
			assert.Equal(t, tc.conns, cfg.pipeConns)
		})
	}
}
