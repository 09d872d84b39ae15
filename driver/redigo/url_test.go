package redigo

import (
	"crypto/tls"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// secret is the password used by every table case that has one: it must
// never appear in an error.
const secret = "s3cr3t-Pw"

func TestResolve_GoodAddresses(t *testing.T) {
	def := defaults()
	tests := []struct {
		addr string
		want func(c *config) // edits the defaults into the expected config
	}{
		{"127.0.0.1:6379", func(c *config) { c.addr = "127.0.0.1:6379" }},
		{"  localhost:7000\t", func(c *config) { c.addr = "localhost:7000" }},
		{"[::1]:6380", func(c *config) { c.addr = "[::1]:6380" }},
		{"db.internal:0007", func(c *config) { c.addr = "db.internal:7" }},
		{"redis://localhost", func(c *config) { c.addr = "localhost:6379" }},
		{"redis://localhost/", func(c *config) { c.addr = "localhost:6379" }},
		{"redis://10.0.0.7:7001/3", func(c *config) { c.addr, c.db = "10.0.0.7:7001", 3 }},
		{"redis://[::1]:7000/0", func(c *config) { c.addr = "[::1]:7000" }},
		{"redis://[::1]", func(c *config) { c.addr = "[::1]:6379" }},
		{"redis://[fe80::1%25eth0]:7000", func(c *config) { c.addr = "[fe80::1%eth0]:7000" }},
		{"redis://my_host.example-1.com:1", func(c *config) { c.addr = "my_host.example-1.com:1" }},
		{"rediss://cache.example.com", func(c *config) { c.addr, c.useTLS = "cache.example.com:6379", true }},
		{"redis://:" + secret + "@h:1", func(c *config) { c.addr, c.password = "h:1", secret }},
		{"redis://alice:" + secret + "@h:1", func(c *config) { c.addr, c.username, c.password = "h:1", "alice", secret }},
		// A lone user part is the password, as redis-cli reads it.
		{"redis://" + secret + "@h:1", func(c *config) { c.addr, c.password = "h:1", secret }},
		{"redis://alice:p%40ss%2Fw@h:1", func(c *config) { c.addr, c.username, c.password = "h:1", "alice", "p@ss/w" }},
		{
			"redis://h:1/2?dial_timeout=250ms&read_timeout=2s&write_timeout=3s",
			func(c *config) {
				c.addr, c.db = "h:1", 2
				c.dialTimeout, c.readTimeout, c.writeTimeout = 250*time.Millisecond, 2*time.Second, 3*time.Second
			},
		},
		{"redis://h:1?db=4", func(c *config) { c.addr, c.db = "h:1", 4 }},
		{"redis://h:1?pipeline_conns=4", func(c *config) { c.addr, c.pipeConns = "h:1", 4 }},
		{"redis://h:1/2?db=4", func(c *config) { c.addr, c.db = "h:1", 4 }}, // the parameter wins
		{"redis://h:1?read_timeout=0", func(c *config) { c.addr, c.readTimeout = "h:1", 0 }},
		{"redis://h:1?db=1&db=9", func(c *config) { c.addr, c.db = "h:1", 9 }}, // the last wins
		{"rediss://10.0.0.7:6380?tls_server_name=redis-1", func(c *config) {
			c.addr, c.useTLS = "10.0.0.7:6380", true
			c.tlsParams.ServerName = "redis-1"
			c.tls = &tls.Config{ServerName: "redis-1"}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			got, err := resolve(tt.addr, nil)
			require.NoError(t, err)
			want := def
			tt.want(&want)
			assert.Equal(t, want, got)
		})
	}
}

func TestResolve_BadAddresses(t *testing.T) {
	tests := []struct {
		name, addr string
		wantErr    string // a part of the error text
	}{
		{"empty", "", "empty address"},
		{"blank", " \t ", "empty address"},
		{"no port", "localhost", "missing port"},
		{"empty port", "localhost:", `port ""`},
		{"port not a number", "localhost:redis", `port "redis"`},
		{"port zero", "localhost:0", `port "0"`},
		{"port too big", "localhost:65536", `port "65536"`},
		{"port negative", "localhost:-1", `port "-1"`},
		{"port with sign", "localhost:+80", `port "+80"`},
		{"port hex", "localhost:0x50", `port "0x50"`},
		{"no host", ":6379", "no host"},
		{"space in host", "my host:6379", `' ' is not allowed`},
		{"control character in host", "h\x00:6379", `'\x00' is not allowed`},
		{"bracket in host", "]:6379", "unexpected ']'"},
		{"bad IPv6", "[::g]:6379", "not an IPv6 address"},
		{"too many colons", "::1:6379", "too many colons"},
		{"user info without scheme", secret + "@h:6379", "redis://"},
		{"unknown scheme", "http://h:1", `scheme "http"`},
		{"unknown scheme unix", "unix:///tmp/redis.sock", `scheme "unix"`},
		{"URL without host", "redis://", "no host"},
		{"URL with port only", "redis://:6379", "no host"},
		{"URL lone bracket", "redis://]", `']' is not allowed`},
		{"URL bad IPv6", "redis://[::g]:1", "invalid host"},
		{"URL non-ASCII host", "redis://h\u00e9te:1", "is not allowed"},
		{"URL bad port", "redis://h:99999", `port "99999"`},
		{"URL port zero", "redis://h:0", `port "0"`},
		{"URL port not a number", "redis://h:abc", "invalid port"},
		{"URL bad db", "redis://h/abc", `database "abc"`},
		{"URL negative db", "redis://h/-1", `database "-1"`},
		{"URL db with subpath", "redis://h/1/2", `database "1/2"`},
		{"URL bad db parameter", "redis://h?db=x", "db="},
		{"URL negative db parameter", "redis://h?db=-2", "db -2 is negative"},
		{"URL unknown parameter", "redis://h?timeout=1s", `unknown parameter "timeout"`},
		{"URL bad duration", "redis://h?dial_timeout=soon", "dial_timeout="},
		{"URL duration without unit", "redis://h?read_timeout=5", "read_timeout="},
		{"URL negative duration", "redis://h?write_timeout=-1s", "write timeout -1s is negative"},
		{"cluster URL", "redis+cluster://h:1,h:2", "for Open or NewCluster"},
		// The connections are shared: there is no pool to size.
		{"URL max_idle", "redis://h?max_idle=5", `unknown parameter "max_idle"`},
		{"URL bad pipeline_conns", "redis://h?pipeline_conns=0", "pipeline connections 0 not in 1..64"},
		{"URL pipeline", "redis://h?pipeline=false", `unknown parameter "pipeline"`},
		{"URL db overflow", "redis://h/99999999999999999999999", "database"},
		{"URL username without password", "redis://alice:@h", "a username needs a password"},
		{"URL bad escape", "redis://h/%zz", "invalid URL escape"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := resolve(tt.addr, nil)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
			assert.Contains(t, err.Error(), "redigo", "errors name the package")
		})
	}
}

// Every malformed address here carries the password; none of the errors may.
func TestResolve_ErrorsNeverShowThePassword(t *testing.T) {
	addrs := []string{
		"redis://alice:" + secret + "@h:0",
		"redis://alice:" + secret + "@h/abc",
		"redis://alice:" + secret + "@h?nope=1",
		"redis://alice:" + secret + "@h?dial_timeout=x",
		"redis://alice:" + secret + "@h?pipeline_conns=-1",
		"redis://:" + secret + "@h:99999",
		"redis://" + secret + "@h:0",           // lone user part: the password
		"redis://" + secret + "@h/abc",         // idem
		"redis://" + secret + "@h?nope=1",      // idem
		"http://alice:" + secret + "@h",        // unknown scheme
		"redis://alice:" + secret + "@h:bad",   // url.Parse fails
		"redis://alice:" + secret + "%zz@h",    // url.Parse fails inside the user info
		"redis://alice:" + secret + " x@h",     // idem
		"redis://alice:" + secret + "@",        // no host
		"redis://alice:" + secret + "/x@h:1",   // an unescaped '/' in the password
		"redis://alice:" + secret + "/x@h:1/2", // idem, with a path
		"redis://alice:" + secret + "@h:1#x@y", // fragment
		"redis://alice:12/" + secret + "@h",    // the password splits at '/': host "alice", port 12
		"alice:" + secret + "@h:6379",          // no scheme
		secret + "@h:6379",                     // no scheme, lone password
		secret + "@h:bad",                      // idem, bad port
	}
	for _, addr := range addrs {
		t.Run(addr, func(t *testing.T) {
			_, err := resolve(addr, nil)
			require.Error(t, err)
			assert.NotContains(t, err.Error(), secret)
			assert.NotContains(t, err.Error(), "Pw", "a part of the password")
		})
	}
}

func TestResolve_OptionsOverrideTheURL(t *testing.T) {
	got, err := resolve("redis://alice:pw@h:1/3?dial_timeout=1s&read_timeout=1s&write_timeout=1s&pipeline_conns=1", []Option{
		WithDialTimeout(2 * time.Second),
		WithReadTimeout(3 * time.Second),
		WithWriteTimeout(4 * time.Second),
		WithPipelineConns(5),
		WithDB(8),
		WithAuth("", "other"),
		WithTLS(nil),
	})
	require.NoError(t, err)
	assert.Equal(t, 2*time.Second, got.dialTimeout)
	assert.Equal(t, 3*time.Second, got.readTimeout)
	assert.Equal(t, 4*time.Second, got.writeTimeout)
	assert.Equal(t, 5, got.pipeConns)
	assert.Equal(t, 8, got.db)
	assert.Equal(t, "", got.username)
	assert.Equal(t, "other", got.password)
	assert.True(t, got.useTLS)
	assert.Equal(t, "h:1", got.addr)
}

func TestResolve_Defaults(t *testing.T) {
	got, err := resolve("h:1", nil)
	require.NoError(t, err)
	assert.Equal(t, DefaultDialTimeout, got.dialTimeout)
	assert.Equal(t, DefaultReadTimeout, got.readTimeout)
	assert.Equal(t, DefaultWriteTimeout, got.writeTimeout)
	assert.Equal(t, DefaultPipelineConns, got.pipeConns)
	assert.Zero(t, got.db)
	assert.Empty(t, got.username)
	assert.Empty(t, got.password)
	assert.False(t, got.useTLS)
	assert.Nil(t, got.tls)
}
