package pipeline

import (
	"errors"
	"strings"

	"github.com/quorumlock/quorumlock/driver"
)

// unauthenticated turns the protocol error with which Redis answers a
// pipeline on a connection that has not authenticated into the NOAUTH it
// stands for: the master requires a password and none was given.
func unauthenticated(err error) error {
	var de driver.Error
	if errors.As(err, &de) && strings.Contains(string(de), "unauthenticated") {
		return driver.Error("NOAUTH Authentication required (the master requires a password: give it in the address, redis://user:password@host:port)")
	}
	return err
}
