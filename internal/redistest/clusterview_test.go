package redistest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseView(t *testing.T) {
	const three = "" +
		"07c37dfeb235213a872192d90877d0cd55635b91 127.0.0.1:30004@31004,host-a slave e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 0 1426238317239 4 connected\n" +
		"67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1 127.0.0.1:30002@31002 master - 0 1426238316232 2 connected 5461-10922\n" +
		"292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f 127.0.0.1:30003@31003 master - 0 1426238318243 3 connected 10923-16383\n" +
		"e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 127.0.0.1:30001@31001 myself,master - 0 0 1 connected 0-5460\n"
	tests := []struct {
		name     string
		body     string
		masters  []string
		covers   bool
		owner0   string
		replicas []string // of 127.0.0.1:30001
	}{
		{
			name:     "three masters, one replica",
			body:     three,
			masters:  []string{"127.0.0.1:30001", "127.0.0.1:30002", "127.0.0.1:30003"},
			covers:   true,
			owner0:   "127.0.0.1:30001",
			replicas: []string{"127.0.0.1:30004"},
		},
		{
			name: "single slots and ranges of one owner merge; slots in migration are skipped",
			body: "" +
				"a 127.0.0.1:1@2 myself,master - 0 0 1 connected 0-99 100 101-8000 [8001->-b]\n" +
				"b 127.0.0.1:3@4 master - 0 0 2 connected 8001-16383 [8001-<-a]\n",
			masters: []string{"127.0.0.1:1", "127.0.0.1:3"},
			covers:  true,
			owner0:  "127.0.0.1:1",
		},
		{
			name: "a slot no one owns",
			body: "" +
				"a 127.0.0.1:1@2 myself,master - 0 0 1 connected 0-99\n" +
				"b 127.0.0.1:3@4 master,fail - 0 0 2 disconnected 101-16383\n",
			masters: []string{"127.0.0.1:1", "127.0.0.1:3"},
			owner0:  "127.0.0.1:1",
		},
		{
			name:    "a master with no slots is not listed",
			body:    "a 127.0.0.1:1@2 myself,master - 0 0 1 connected\n",
			masters: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := parseView(tt.body)
			require.NoError(t, err)
			assert.Equal(t, tt.masters, v.masters())
			assert.Equal(t, tt.covers, covers(v.slotMap()))
			assert.Equal(t, tt.owner0, v.owner(0))
			assert.Equal(t, tt.replicas, v.replicasOf("127.0.0.1:30001"))
		})
	}
}

func TestParseView_RejectsMalformedLines(t *testing.T) {
	tests := []struct{ name, body string }{
		{"too few fields", "a 127.0.0.1:1@2 master - 0 0 1\n"},
		{"not a number", "a 127.0.0.1:1@2 master - 0 0 1 connected 0-x\n"},
		{"range backwards", "a 127.0.0.1:1@2 master - 0 0 1 connected 9-3\n"},
		{"past the last slot", "a 127.0.0.1:1@2 master - 0 0 1 connected 0-16384\n"},
		{"negative", "a 127.0.0.1:1@2 master - 0 0 1 connected -1\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseView(tt.body)
			assert.Error(t, err)
		})
	}
}

func TestClusterOptions_Defaults(t *testing.T) {
	o, err := ClusterOptions{}.withDefaults()
	require.NoError(t, err)
	assert.Equal(t, 3, o.Shards)
	assert.Equal(t, 0, o.Replicas)
	assert.Positive(t, o.NodeTimeout)
	for _, bad := range []ClusterOptions{{Shards: 2}, {Shards: -1}, {Replicas: -1}, {NodeTimeout: -1}} {
		_, err := bad.withDefaults()
		assert.Error(t, err, "%+v", bad)
	}
}

func TestAgreeOnRoles(t *testing.T) {
	const (
		// How a and b see themselves and each other once b replicates a.
		aAfter = "a 127.0.0.1:1@2 myself,master - 0 0 1 connected 0-16383\n" +
			"b 127.0.0.1:3@4 slave a 0 0 1 connected\n"
		bAfter = "a 127.0.0.1:1@2 master - 0 0 1 connected 0-16383\n" +
			"b 127.0.0.1:3@4 myself,slave a 0 0 1 connected\n"
		// a has not yet heard that b became its replica.
		aBefore = "a 127.0.0.1:1@2 myself,master - 0 0 1 connected 0-16383\n" +
			"b 127.0.0.1:3@4 master - 0 0 0 connected\n"
		// c is not running, so only a and b's own word counts.
		aWithDead = aAfter + "c 127.0.0.1:5@6 master,fail - 0 0 2 disconnected\n"
	)
	tests := []struct {
		name  string
		views map[string]string
		agree bool
	}{
		{"both agree", map[string]string{"127.0.0.1:1": aAfter, "127.0.0.1:3": bAfter}, true},
		{"a has not heard yet", map[string]string{"127.0.0.1:1": aBefore, "127.0.0.1:3": bAfter}, false},
		{"a node that is not running is not asked", map[string]string{"127.0.0.1:1": aWithDead, "127.0.0.1:3": bAfter}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			views := map[string]clusterView{}
			for addr, body := range tt.views {
				v, err := parseView(body)
				require.NoError(t, err)
				views[addr] = v
			}
			err := agreeOnRoles(views)
			assert.Equal(t, tt.agree, err == nil, "err: %v", err)
		})
	}
}
