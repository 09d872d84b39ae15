package pipeline

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/driver"
)

func TestReadReply_GoodReplies(t *testing.T) {
	tests := []struct {
		name, wire string
		want       any
	}{
		{"status", "+OK\r\n", "OK"},
		{"error", "-NOSCRIPT No matching script\r\n", driver.Error("NOSCRIPT No matching script")},
		{"integer", ":42\r\n", int64(42)},
		{"negative integer", ":-7\r\n", int64(-7)},
		{"largest integer", ":9223372036854775807\r\n", int64(1<<63 - 1)},
		{"bulk", "$5\r\nhello\r\n", "hello"},
		{"empty bulk", "$0\r\n\r\n", ""},
		{"bulk with CRLF inside", "$4\r\na\r\nb\r\n", "a\r\nb"},
		{"nil bulk", "$-1\r\n", nil},
		{"nil array", "*-1\r\n", nil},
		{"empty array", "*0\r\n", []any{}},
		{"line longer than the buffer", "-ERR " + strings.Repeat("x", 100) + "\r\n", driver.Error("ERR " + strings.Repeat("x", 100))},
		{"nested", "*3\r\n:1\r\n*2\r\n$1\r\nx\r\n-ERR inner\r\n$-1\r\n", []any{int64(1), []any{"x", driver.Error("ERR inner")}, nil}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			br := bufio.NewReaderSize(strings.NewReader(tt.wire+":1\r\n"), 16)
			got, err := readReply(br)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			next, err := readReply(br)
			require.NoError(t, err, "the reply was not read to its end")
			assert.Equal(t, int64(1), next)
		})
	}
}

func TestReadReply_BadReplies(t *testing.T) {
	tests := []struct {
		name, wire string
		protocol   bool // errProtocol, or else a read error
	}{
		{"unknown type", "!x\r\n", true},
		{"LF alone", "+OK\n", true},
		{"empty line", "\r\n", true},
		{"integer not a number", ":4x\r\n", true},
		{"integer overflow", ":9223372036854775808\r\n", true},
		{"bare minus", ":-\r\n", true},
		{"negative bulk length", "$-2\r\n", true},
		{"bulk too long", "$999999999999\r\n", true},
		{"bulk without CRLF", "$2\r\nabXY", true},
		{"array too long", "*99999999\r\n", true},
		{"nested too deep", strings.Repeat("*1\r\n", maxDepth+1) + ":1\r\n", true},
		{"line longer than the limit", "+" + strings.Repeat("x", maxLine+1) + "\r\n", true},
		{"cut in a bulk", "$10\r\nabc", false},
		{"cut in an array", "*2\r\n:1\r\n", false},
		{"nothing", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readReply(bufio.NewReaderSize(strings.NewReader(tt.wire), 16))
			require.Error(t, err)
			if tt.protocol {
				assert.ErrorIs(t, err, errProtocol)
			} else {
				assert.True(t, errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF), "%v", err)
			}
		})
	}
}

func TestAppendEval_IsWhatRedisReads(t *testing.T) {
	s := driver.NewScript("s", "return 1")
	call := driver.Call{Script: s, Keys: []string{"k1", "k2"}, Args: []string{"a", ""}}
	got := string(appendEval(nil, call, "", false))
	want := "*7\r\n$7\r\nEVALSHA\r\n$40\r\n" + s.SHA + "\r\n$1\r\n2\r\n$2\r\nk1\r\n$2\r\nk2\r\n$1\r\na\r\n$0\r\n\r\n"
	assert.Equal(t, want, got)
	got = string(appendEval(nil, call, "", true))
	assert.True(t, strings.HasPrefix(got, "*7\r\n$4\r\nEVAL\r\n$8\r\nreturn 1\r\n$1\r\n2\r\n"), got)
	assert.Equal(t, "*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n", string(appendCommand(nil, []string{"INFO", "server"})))
}

// Whatever the master sends, the reader returns a reply or an error and
// never panics.
func FuzzReadReply(f *testing.F) {
	for _, s := range []string{"+OK\r\n", ":1\r\n", "$3\r\nabc\r\n", "*2\r\n$-1\r\n-ERR x\r\n", "*1\r\n*1\r\n*-1\r\n", "$-5\r\n", ":\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, wire []byte) {
		br := bufio.NewReaderSize(strings.NewReader(string(wire)), 16)
		for range 64 { // bounded: each reply takes at least 3 bytes, and an error ends it
			if _, err := readReply(br); err != nil {
				return
			}
		}
	})
}
