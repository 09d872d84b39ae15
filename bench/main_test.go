package bench

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if specs := os.Getenv(proxyHostEnv); specs != "" {
		os.Exit(proxyHost(specs))
	}
	// A rueidis cluster client closes the connections its slot map no
	// longer names 5 s later, from a goroutine of its own that Close does
	// not stop: rueidis's, not the contender's.
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*clusterClient)._refresh.func2"))
}
