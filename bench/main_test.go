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
	goleak.VerifyTestMain(m)
}
