//go:build unix && !linux

package main

import "syscall"

// dieWithParent does nothing here: only Linux can tie a child's life to its
// parent's. If redlock is killed, the child runs on without the lock.
func dieWithParent(*syscall.SysProcAttr) {}
