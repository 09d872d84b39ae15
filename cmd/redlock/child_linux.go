package main

import "syscall"

// dieWithParent has the kernel kill the child if redlock itself dies: the
// lock would no longer be extended, and the child must not go on without it.
func dieWithParent(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
