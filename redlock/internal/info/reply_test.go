package info

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// replyCase is a reply and what a parser of it returns.
type replyCase struct {
	name  string
	reply any
	want  map[string]string
	err   string // a part of the error, "" when none
}

func TestSection(t *testing.T) {
	testReplies(t, Section, []replyCase{
		{"fields", "# Server\r\nrun_id:abc\r\nuptime_in_seconds:42\r\n", map[string]string{"run_id": "abc", "uptime_in_seconds": "42"}, ""},
		{"bare newlines and spaces", "  role:master  \nx:1", map[string]string{"role": "master", "x": "1"}, ""},
		{"value with colons", "executable:/a:b", map[string]string{"executable": "/a:b"}, ""},
		{"comments and lines without a colon", "# Memory\r\n#x:1\r\nnothing\r\n\r\n", map[string]string{}, ""},
		{"empty value", "role:", map[string]string{"role": ""}, ""},
		{"empty", "", map[string]string{}, ""},
		{"error reply", deniedErr("NOPERM"), nil, "NOPERM"},
		{"not a string", []any{"role:master"}, nil, "unexpected reply"},
		{"nil", nil, nil, "unexpected reply"},
	})
}

func TestConfigPairs(t *testing.T) {
	testReplies(t, ConfigPairs, []replyCase{
		{"pairs", []any{"appendonly", "yes", "appendfsync", "always"}, map[string]string{"appendonly": "yes", "appendfsync": "always"}, ""},
		{"none", []any{}, map[string]string{}, ""},
		{"odd", []any{"appendonly"}, nil, "unexpected reply"},
		{"a name not a string", []any{1, "yes"}, nil, "unexpected reply"},
		{"a value not a string", []any{"appendonly", nil}, nil, "unexpected reply"},
		{"not a list", "appendonly yes", nil, "unexpected reply"},
		{"nil", nil, nil, "unexpected reply"},
		{"error reply", deniedErr("NOPERM"), nil, "NOPERM"},
	})
}

func testReplies(t *testing.T, parse func(any) (map[string]string, error), cases []replyCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parse(tc.reply)
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
