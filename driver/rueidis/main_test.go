package rueidisdriver_test

import (
	"testing"

	"go.uber.org/goleak"
)

// A rueidis cluster client that met a node down while it refreshed its
// slot map retries after a 5 s sleep in a goroutine of its own that Close
// does not stop: rueidis's, not the adapter's.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*clusterClient)._refresh.func2"))
}
