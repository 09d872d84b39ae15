package pipeline

import (
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/quorumlock/quorumlock/driver"
)

// Stale reports errors of a connection that died under a call or before
// it, as after a master restart: a fresh connection may well succeed. A
// master's reply and a timeout are not stale.
func Stale(err error) bool {
	var de driver.Error
	if errors.As(err, &de) {
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, net.ErrClosed)
}

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
