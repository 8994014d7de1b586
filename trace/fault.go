package trace

import "fmt"

// FaultKind is the kind of a fault (the simulator's fault model, and the
// signals leaselab torture sends real processes).
type FaultKind uint8

// The fault kinds.
const (
	Kill    FaultKind = iota + 1 // SIGKILL
	Term                         // SIGTERM
	Stop                         // SIGSTOP, followed by SIGCONT
	Skew                         // one process's wall clock steps
	Drift                        // one process's clock rate changes
	Jump                         // the machine's wall clock steps
	FSError                      // a system call fails with an errno
	Power                        // the machine loses power
	// Cont is SIGCONT. A Stop schedules it; it is not injected alone.
	Cont FaultKind = 100
)

var faultNames = [...]string{Kill: "kill", Term: "term", Stop: "stop", Skew: "skew", Drift: "drift", Jump: "jump", FSError: "fserr", Power: "power"}

func (k FaultKind) String() string {
	if k == Cont {
		return "cont"
	}
	if int(k) < len(faultNames) && faultNames[k] != "" {
		return faultNames[k]
	}
	return fmt.Sprintf("FaultKind(%d)", k)
}
