package quorumlock_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A program that locks imports redlock, and redlock imports the default
// driver: what that driver links, every user carries. It links no Redis
// client library, so that a program on go-redis or rueidis carries only
// its own; and no in-process master, which only redlocktest brings.
func TestDeps_RedlockLinksNoClientLibraryAndNoTestMaster(t *testing.T) {
	goBin, err := exec.LookPath("go")
	require.NoError(t, err)
	out, err := exec.Command(goBin, "list", "-deps", "./redlock").CombinedOutput()
	require.NoError(t, err, "%s", out)
	deps := strings.Fields(string(out))
	require.Contains(t, deps, "github.com/quorumlock/quorumlock/driver/redigo", "the default driver is among the packages listed")
	for _, banned := range []string{
		"github.com/gomodule/redigo",
		"github.com/redis/go-redis",
		"github.com/redis/rueidis",
		"github.com/alicebob/miniredis",
	} {
		for _, d := range deps {
			assert.False(t, d == banned || strings.HasPrefix(d, banned+"/"), "redlock links %s", d)
		}
	}
}
