// Package clock is the lock algorithm's only source of time.
//
// Real returns the process clock. Fake is a clock that moves only when a test
// calls Advance, with BlockUntil to wait until the code under test has parked
// on a timer, so that timeouts, retries and watchdogs can be tested without
// sleeping. The interface is kept to what the redlock package uses.
package clock
