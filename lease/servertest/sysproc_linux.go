package servertest

import "syscall"

// sysProcAttr starts a server in a process group of its own (Kill reaches
// every process of the server), killed with the test binary (Pdeathsig),
// as cred.
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: cred}
}
