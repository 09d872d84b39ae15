package redistest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Redis60Env names the environment variable that points at a Redis 6.0
// redis-server, for the tests that run the library on the oldest Redis it
// supports.
const Redis60Env = "REDIS_SERVER_6_0"

// Redis60Dir is where .ci/fetch-redis-6.0 puts Redis 6.0 by default, under
// the user's cache directory.
const Redis60Dir = "quorumlock/redis-6.0"

// Binary60 returns the path of a Redis 6.0 redis-server: $REDIS_SERVER_6_0,
// or the one .ci/fetch-redis-6.0 fetched into the user's cache directory. A
// missing binary is an error that says how to get it.
func Binary60() (string, error) {
	p := os.Getenv(Redis60Env)
	if p == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("redistest: no %s and no cache directory: %w", Redis60Env, err)
		}
		p = filepath.Join(dir, Redis60Dir, "redis-server")
	}
	out, err := exec.Command(p, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("redistest: Redis 6.0 not found at %s (%v): run .ci/fetch-redis-6.0, which takes Debian bullseye's redis-server 6.0.16 from Debian's archive, or set %s", p, err, Redis60Env)
	}
	if !strings.Contains(string(out), "v=6.0.") {
		return "", fmt.Errorf("redistest: %s is not Redis 6.0: %s", p, out)
	}
	return p, nil
}
