package info

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSection(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply any
		want  map[string]string
		err   string
	}{
		{"fields", "# Server\r\nrun_id:abc\r\nuptime_in_seconds:42\r\n", map[string]string{"run_id": "abc", "uptime_in_seconds": "42"}, ""},
		{"bare newlines and spaces", "  role:master  \nx:1", map[string]string{"role": "master", "x": "1"}, ""},
		{"value with colons", "executable:/a:b", map[string]string{"executable": "/a:b"}, ""},
		{"comments and lines without a colon", "# Memory\r\n#x:1\r\nnothing\r\n\r\n", map[string]string{}, ""},
		{"empty value", "role:", map[string]string{"role": ""}, ""},
		{"empty", "", map[string]string{}, ""},
		{"error reply", deniedErr("NOPERM"), nil, "NOPERM"},
		{"not a string", []any{"role:master"}, nil, "unexpected reply"},
		{"nil", nil, nil, "unexpected reply"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Section(tc.reply)
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				assert.Nil(t, got)
				return
			}
			assert.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestConfigPairs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply any
		want  map[string]string
		err   string
	}{
		{"pairs", []any{"appendonly", "yes", "appendfsync", "always"}, map[string]string{"appendonly": "yes", "appendfsync": "always"}, ""},
		{"none", []any{}, map[string]string{}, ""},
		{"odd", []any{"appendonly"}, nil, "unexpected reply"},
		{"a name not a string", []any{1, "yes"}, nil, "unexpected reply"},
		{"a value not a string", []any{"appendonly", nil}, nil, "unexpected reply"},
		{"not a list", "appendonly yes", nil, "unexpected reply"},
		{"nil", nil, nil, "unexpected reply"},
		{"error reply", deniedErr("NOPERM"), nil, "NOPERM"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ConfigPairs(tc.reply)
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				assert.Nil(t, got)
				return
			}
			assert.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}
