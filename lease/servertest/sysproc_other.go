//go:build !linux

package servertest

import "syscall"

// sysProcAttr starts a server in a process group of its own (Kill reaches
// every process of the server), as cred. Without Linux's Pdeathsig a
// server outlives a test binary that dies before its cleanup.
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Credential: cred}
}
