// Package scripts holds the lock's Lua scripts and, beside each, its Go
// binding: the keys and arguments a run takes, and its reply decoded into a
// typed value. A script's contract lives in its .lua file's header and in
// its binding, and nowhere else.
package scripts

import (
	"embed"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/quorumlock/quorumlock/driver"
)

//go:embed *.lua
var files embed.FS

// Set is the lock's scripts, each prefixed with lib.lua.
type Set struct {
	Acquire, Extend, Release, Fence, Inspect, Leave *driver.Script
	// A semaphore's permits (see permits.lua).
	Permit, PermitExtend, PermitRelease, PermitFence *driver.Script
	// A read hold of an RWLock (see read.lua); the permit scripts extend,
	// release and fence it.
	Read *driver.Script
	// A set of keys taken together (see acquireall.lua).
	AcquireAll, ExtendAll, ReleaseAll, FenceAll *driver.Script

	// rendered remembers durations as the scripts take them: a client
	// mostly asks for the same few TTLs, and each would cost an allocation
	// per call to render again.
	rendered [4]atomic.Pointer[renderedMS]
}

// renderedMS is a duration and its rendering by ms.
type renderedMS struct {
	d time.Duration
	s string
}

// ms is ms(d), remembered.
func (s *Set) ms(d time.Duration) string {
	m := d.Milliseconds()
	slot := &s.rendered[(m^m>>7^m>>14)&3]
	if r := slot.Load(); r != nil && r.d == d {
		return r.s
	}
	r := &renderedMS{d: d, s: ms(d)}
	slot.Store(r)
	return r.s
}

// New loads the scripts.
func New() *Set {
	lib := mustRead("lib.lua")
	mk := func(name string) *driver.Script {
		return driver.NewScript(name, lib+"\n"+mustRead(name+".lua"))
	}
	permits := mustRead("permits.lua")
	mkPermit := func(name string) *driver.Script {
		return driver.NewScript(name, lib+"\n"+permits+"\n"+mustRead(name+".lua"))
	}
	s := &Set{
		Acquire:       mk("acquire"),
		Extend:        mk("extend"),
		Release:       mk("release"),
		Fence:         mk("fence"),
		Inspect:       mk("inspect"),
		Leave:         mk("leave"),
		Permit:        mkPermit("permit"),
		PermitExtend:  mkPermit("permitextend"),
		PermitRelease: mkPermit("permitrelease"),
		PermitFence:   mkPermit("permitfence"),
		Read:          mkPermit("read"),
		AcquireAll:    mk("acquireall"),
		ExtendAll:     mk("extendall"),
		ReleaseAll:    mk("releaseall"),
		FenceAll:      mk("fenceall"),
	}
	s.Acquire.TakesHint = true
	s.Permit.TakesHint = true
	s.Read.TakesHint = true
	s.AcquireAll.TakesHint = true
	return s
}

// mustRead reads an embedded script. The files are compiled into the binary,
// so a failure is a build defect, not a run-time condition.
func mustRead(name string) string {
	b, err := files.ReadFile(name)
	if err != nil {
		panic("redlock: embedded script missing: " + name)
	}
	return string(b)
}

// ms renders a duration as whole milliseconds for PX and PEXPIRE.
func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// PTTL values a script reports instead of a remaining time, as Redis's PTTL
// does, and one of the acquire script's own.
const (
	NoExpiry   = -1 * time.Millisecond // the key has no TTL
	NoKey      = -2 * time.Millisecond // the key does not exist
	RolledBack = -3 * time.Millisecond // acquire: the attempt's tombstone is here
	// PermitsDiffer: permit.lua found the key's record of another number of
	// permits than asked (Grant.Permits).
	PermitsDiffer = -4 * time.Millisecond
)

// decoding helpers for the driver's neutral replies.

func array(v any, min int) ([]any, error) {
	xs, ok := v.([]any)
	if !ok || len(xs) < min {
		return nil, fmt.Errorf("reply %v: want an array of %d or more", v, min)
	}
	return xs, nil
}

func integer(v any) (int64, error) {
	switch v := v.(type) {
	case int64:
		return v, nil
	case string:
		return strconv.ParseInt(v, 10, 64)
	}
	return 0, fmt.Errorf("reply %v: want an integer", v)
}

func str(v any) (string, bool) {
	s, ok := v.(string)
	return s, ok
}
