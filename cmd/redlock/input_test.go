package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestBadInput_OneLineOnStderr(t *testing.T) {
	tests := []struct {
		name string
		env  []string
		args []string
		want int
		says string // the line names the bad value
	}{
		{"no command", nil, nil, exitUsage, "Usage"},
		{"unknown command", nil, []string{"frobnicate"}, exitUsage, `unknown command "frobnicate"`},
		{"unknown flag", nil, []string{"demo", "--frobnicate"}, exitUsage, "-frobnicate"},
		{"bad duration", nil, []string{"demo", "--duration", "soon"}, exitUsage, `"soon"`},
		{"negative duration", nil, []string{"demo", "--duration", "-1s"}, exitUsage, "--duration -1s"},
		{"hold over half the ttl", nil, []string{"demo", "--hold", "800ms"}, exitUsage, "--hold 800ms"},
		{"bad restart guard", nil, []string{"demo", "--restart-guard", "later"}, exitUsage, `"later"`},
		{"drift factor out of range", nil, []string{"demo", "--drift-factor", "2", "--duration", "1s"}, exitUsage, "drift factor 2"},
		{"quorum below a majority", nil, []string{"bench", "--quorum", "1", "--duration", "1s"}, exitUsage, "quorum 1"},
		{"zero concurrency", nil, []string{"bench", "--concurrency", "0"}, exitUsage, "--concurrency 0"},
		{"status without keys", []string{nodesEnv + "=127.0.0.1:1"}, []string{"status"}, exitUsage, "no key given"},
		{"status without masters", nil, []string{"status", "k"}, exitUsage, "no masters"},
		{"run without masters", nil, []string{"run", "--", "true"}, exitUsage, "no masters"},
		{"bad address", nil, []string{"run", "--nodes", "localhost", "--", "true"}, exitUsage, `"localhost"`},
		{"bad port", []string{nodesEnv + "=127.0.0.1:99999"}, []string{"status", "k"}, exitUsage, `"99999"`},
		{"empty node entry", nil, []string{"status", "--nodes", "127.0.0.1:1,,127.0.0.1:2", "k"}, exitUsage, "entry 2 is empty"},
		{"same master twice", nil, []string{"status", "--nodes", "127.0.0.1:1,127.0.0.1:1", "k"}, exitUsage, "127.0.0.1:1"},
		{"empty --key", nil, []string{"run", "--nodes", "127.0.0.1:1", "--key", "", "--", "true"}, exitUsage, "--key is empty"},
		{"empty --key=", nil, []string{"run", "--nodes", "127.0.0.1:1", "--key=", "--", "true"}, exitUsage, "--key is empty"},
		{"ttl without a unit", nil, []string{"run", "--nodes", "127.0.0.1:1", "--ttl", "10", "--", "true"}, exitUsage, `invalid value "10" for flag -ttl: no unit: use a unit, such as 10s or 10ms`},
		{"wait without a unit", nil, []string{"run", "--nodes", "127.0.0.1:1", "--wait", "1.5", "--", "true"}, exitUsage, "use a unit, such as 1.5s"},
		{"node timeout without a unit", nil, []string{"status", "--nodes", "127.0.0.1:1", "--node-timeout", "50", "k"}, exitUsage, "use a unit, such as 50s or 50ms"},
		{"demo duration without a unit", nil, []string{"demo", "--duration", "5"}, exitUsage, "use a unit, such as 5s"},
		{"restart guard without a unit", nil, []string{"status", "--nodes", "127.0.0.1:1", "--restart-guard", "30", "k"}, exitUsage, "use a unit, such as 30s"},
		{"negative grace", nil, []string{"run", "--nodes", "127.0.0.1:1", "--grace", "-1s", "--", "true"}, exitUsage, "--grace -1s"},
		{"ttl too short for the drift", nil, []string{"run", "--nodes", "127.0.0.1:1", "--ttl", "2ms", "--", "true"}, exitUsage, "ttl 2ms"},
		{"missing TLS CA file", nil, []string{"status", "--nodes", "127.0.0.1:1", "--tls-ca-file", "/no/such/ca.pem", "k"}, exitUsage, `CA file "/no/such/ca.pem": no such file or directory`},
		{"missing client key file", nil, []string{"run", "--nodes", "127.0.0.1:1", "--tls-cert-file", "/no/such/client.pem", "--tls-key-file", "/no/such/key.pem", "--", "true"}, exitUsage, `client certificate "/no/such/client.pem": no such file`},
		{"client certificate without key", nil, []string{"run", "--nodes", "127.0.0.1:1", "--tls-cert-file", "/etc/hostname", "--", "true"}, exitUsage, `client certificate "/etc/hostname" has no key file`},
		{"TLS flags and a URL's tls parameters", nil, []string{"status", "--nodes", "127.0.0.1:1,rediss://:pw@127.0.0.1:2?tls_server_name=x", "--tls", "k"}, exitUsage, "node 1 is a URL with tls_* parameters"},
		{"verification cannot be skipped", nil, []string{"status", "--nodes", "rediss://:pw@127.0.0.1:2?insecure_skip_verify=true", "k"}, exitUsage, "cannot be turned off"},
		{"unreachable masters, run", nil, []string{"run", "--nodes", "127.0.0.1:1,127.0.0.1:2,127.0.0.1:3", "--", "true"}, exitError, "only 0 of 3 masters can vote"},
		{"unreachable masters, status", nil, []string{"status", "--nodes", "127.0.0.1:1,127.0.0.1:2,127.0.0.1:3", "k"}, exitError, "only 0 of 3 masters can vote"},
		{"unreachable masters, demo", nil, []string{"demo", "--nodes", "127.0.0.1:1,127.0.0.1:2,127.0.0.1:3"}, exitError, "only 0 of 3 masters can vote"},
		{"unreachable masters, bench", []string{nodesEnv + "=127.0.0.1:1,127.0.0.1:2,127.0.0.1:3"}, []string{"bench"}, exitError, "no answer from 127.0.0.1:1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := bin.run(t, tt.env, tt.args...)
			assert.Equal(t, tt.want, r.code, "%v", r)
			if tt.name == "no command" {
				assert.Contains(t, r.stderr, tt.says)
				return
			}
			if lines := r.stderrLines(); assert.Len(t, lines, 1, "%v", r) {
				assert.Contains(t, lines[0], tt.says)
			}
			assert.NotContains(t, r.stderr, "panic")
		})
	}
}

func TestHelp_EverySubcommand_ExamplesOnStdout(t *testing.T) {
	for _, c := range subcommands() {
		t.Run(c.name, func(t *testing.T) {
			r := bin.run(t, nil, c.name, "-h")
			assert.Equal(t, 0, r.code, "%v", r)
			assert.Contains(t, r.stdout, "Usage: redlock "+c.name)
			assert.Contains(t, r.stdout, "Examples:")
			assert.Contains(t, r.stdout, "--nodes")
			assert.Contains(t, r.stdout, "--drift-factor float")
			assert.Contains(t, r.stdout, "--ttl duration")
			assert.Empty(t, r.stderr)
		})
	}
	r := bin.run(t, nil, "--help")
	assert.Equal(t, 0, r.code, "%v", r)
	for _, c := range subcommands() {
		assert.Contains(t, r.stdout, c.name)
	}
}
