package model

import (
	"strconv"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/leaselab/leaselab/trace"
)

// Who is an operation's metadata: the process and activity that called it.
type Who struct {
	PID int
	Act string
	// Name is the process as the trace names it (trace.ProcName: its PID,
	// and its index when processes share PIDs); "": its PID.
	Name string
}

func (w Who) String() string {
	if w.Name != "" {
		return w.Name + "/" + w.Act
	}
	return strconv.Itoa(w.PID) + "/" + w.Act
}

// FromTrace returns the trace's Store operations as a porcupine history,
// in order of call. Each (process, activity) pair is one client, numbered
// in order of first appearance: the activities of one process run
// concurrently (a signal handler's Release can overlap the renew loop's
// Renew), and porcupine requires a client's operations to be sequential.
// Call and Return are the call and return events' true times in ns. An
// operation that never returned (its process died, or the run ended
// first) has Output ResUnknown and returns after every event of the trace:
// it may or may not have taken effect, at any point after its call. An
// operation on a remote server's store (Run.Remote) that returned an error
// the store cannot classify (ResUnknown: a timeout, a lost connection)
// may take effect after its client gave up, up to LateBound after its
// error or after the end of a member outage that began by then
// (trace.MemberKill, MemberStop), whichever is later. (A file system's call, or SQLite's,
// that failed has done whatever it did by its return.) Metadata is a Who.
func FromTrace(tr *trace.Trace) []porcupine.Operation { return boxed(historyOf(tr)) }

// histOp is an operation of FromTrace's history before its input and
// output are boxed for porcupine, which a history that Witness linearizes
// never needs.
type histOp struct {
	ClientId int
	Input    Input
	Call     int64
	Output   Output
	Return   int64
	Metadata any
}

// boxed returns h as porcupine's operations.
func boxed(h []histOp) []porcupine.Operation {
	ops := make([]porcupine.Operation, len(h))
	for i, o := range h {
		ops[i] = porcupine.Operation{ClientId: o.ClientId, Input: o.Input, Call: o.Call, Output: o.Output, Return: o.Return, Metadata: o.Metadata}
	}
	return ops
}

// boxedRefsInto returns h as porcupine's operations whose Input and
// Output are pointers into h, on dst's memory when it is large enough:
// boxing each Input and Output value was two allocations an operation, a
// fifth of a check's (Decide's histories, whose operations no caller sees
// but through Culprit, which unboxes).
func boxedRefsInto(dst []porcupine.Operation, h []histOp) []porcupine.Operation {
	var ops []porcupine.Operation
	if dst != nil && cap(dst) >= len(h) {
		ops = dst[:len(h)]
	} else {
		ops = make([]porcupine.Operation, len(h))
	}
	for i := range h {
		o := &h[i]
		ops[i] = porcupine.Operation{ClientId: o.ClientId, Input: &o.Input, Call: o.Call, Output: &o.Output, Return: o.Return, Metadata: o.Metadata}
	}
	return ops
}

// asInput returns an operation's Input, given as a value (FromTrace's
// histories, hand-written ones) or as a pointer (boxedRefsInto).
func asInput(x any) (Input, bool) {
	if p, ok := x.(*Input); ok && p != nil {
		return *p, true
	}
	in, ok := x.(Input)
	return in, ok
}

// asOutput is asInput for an Output.
func asOutput(x any) (Output, bool) {
	if p, ok := x.(*Output); ok && p != nil {
		return *p, true
	}
	out, ok := x.(Output)
	return out, ok
}

// inputOf is asInput for the model, which is given nothing else: it
// panics, as the type assertion it replaces did, on anything else.
func inputOf(x any) Input {
	if in, ok := asInput(x); ok {
		return in
	}
	return x.(Input)
}

// outputOf is inputOf for an Output.
func outputOf(x any) Output {
	if out, ok := asOutput(x); ok {
		return out
	}
	return x.(Output)
}

// historyOf is FromTrace's history, unboxed.
func historyOf(tr *trace.Trace) []histOp { return historyInto(nil, tr) }

// historyInto is historyOf on dst's memory (every operation is written
// whole: nothing of a history before is left in it).
func historyInto(dst []histOp, tr *trace.Trace) []histOp {
	// Each (process, activity) pair's slot in clients and pending, dense:
	// maps keyed by the pair were half of this function's time.
	base := make([]int, len(tr.Acts)+1)
	for p, acts := range tr.Acts {
		base[p+1] = base[p] + len(acts)
	}
	pairs := base[len(tr.Acts)]
	clients := make([]int, pairs) // the pair's client id + 1; 0: none yet
	pending := make([]int, pairs) // index in ops of the pair's outstanding call + 1; 0: none
	nclients := 0
	// A pair the trace does not name (a hand-made or damaged trace) gets a
	// slot after the named ones: its operations are judged like any other,
	// never dropped (a dropped call could leave a history that passes).
	var unnamed map[[2]int16]int
	named := func(e *trace.Event) bool {
		return int(e.Proc) >= 0 && int(e.Proc) < len(tr.Acts) && int(e.Proc) < len(tr.Procs) && int(e.Act) >= 0 && int(e.Act) < len(tr.Acts[e.Proc])
	}
	slot := func(e *trace.Event) int {
		if named(e) {
			return base[e.Proc] + int(e.Act)
		}
		k, ok := unnamed[[2]int16{e.Proc, e.Act}]
		if !ok {
			if unnamed == nil {
				unnamed = map[[2]int16]int{}
			}
			k = len(clients)
			unnamed[[2]int16{e.Proc, e.Act}] = k
			clients, pending = append(clients, 0), append(pending, 0)
		}
		return k
	}
	whoOf := func(e *trace.Event) Who {
		if named(e) {
			return Who{PID: tr.Procs[e.Proc].PID, Act: tr.Acts[e.Proc][e.Act], Name: tr.ProcName(int(e.Proc))}
		}
		return Who{Act: "process " + strconv.Itoa(int(e.Proc)) + " activity " + strconv.Itoa(int(e.Act)) + " (not in the trace)"}
	}
	var who []any // each client's Who, boxed once
	n := 0        // (the history's length, counted first: growing it by appends was most of a check's allocation here)
	for i := range tr.Events {
		if e := &tr.Events[i]; e.Kind == trace.EvStoreCall || e.Kind == trace.EvStore && e.Store == trace.StoreExpire {
			n++
		}
	}
	var ops []histOp
	if dst != nil && cap(dst) >= n {
		ops = dst[:0]
	} else {
		ops = make([]histOp, 0, n)
	}
	var expiries []int // indices in ops of the server's expiries
	var late []int     // indices in ops of failed server requests
	var last int64
	for i := range tr.Events {
		e := &tr.Events[i]
		last = max(last, e.T)
		switch e.Kind {
		case trace.EvStoreCall:
			k := slot(e)
			id := clients[k] - 1
			if id < 0 {
				id = nclients
				nclients++
				clients[k] = id + 1
				who = append(who, whoOf(e))
			}
			pending[k] = len(ops) + 1
			ops = append(ops, histOp{
				ClientId: id,
				Input:    Input{Op: e.Store, Rec: e.Record(), Holder: e.Writer()},
				Call:     e.T,
				Output:   Output{Res: trace.ResUnknown},
				Return:   -1,
				Metadata: who[id],
			})
		case trace.EvStore:
			if e.Store == trace.StoreExpire {
				// The server's own step, at the instant the record expired:
				// a client of its own, so it orders with nothing but time.
				expiries = append(expiries, len(ops))
				ops = append(ops, histOp{
					Input:    Input{Op: trace.StoreExpire, Rec: e.Record()},
					Call:     e.ExpiredAt(),
					Output:   Output{Res: trace.ResOK},
					Return:   e.ExpiredAt(),
					Metadata: Who{PID: 0, Act: "server"},
				})
				continue
			}
			k := slot(e)
			j := pending[k] - 1
			if j < 0 {
				continue // a return without a call: not from recStore
			}
			pending[k] = 0
			if e.Res == trace.ResUnknown && tr.Run.Remote {
				// A request to a server that failed (a timeout, a lost
				// connection) may still take effect after its client
				// gave up: an etcd proposal committed after the
				// client's deadline, a command a paused Redis reads
				// once it runs again. It returns late (LateBound), on
				// a client of its own (its client's next call overlaps
				// it). (Found by TestTortureEtcdCluster: a takeover
				// that timed out while the raft leader member was
				// stopped, read back by another process once it
				// resumed.)
				ops[j].Return = e.T
				late = append(late, j)
				continue
			}
			ops[j].Output = Output{Res: e.Res, Rec: e.Record()}
			ops[j].Return = e.T
		}
	}
	for k, j := range expiries {
		ops[j].ClientId = nclients + k
	}
	never := max(last, int64(tr.End)) + 1
	outages := tr.MemberOutages()
	bound := int64(LateBound(tr.Run.Lease.LeaseDuration))
	for k, j := range late {
		ops[j].ClientId = nclients + len(expiries) + k
		// From the error's instant, or the end of a member outage that
		// began before the request could no longer apply (in time order,
		// so that outages one after another chain).
		from := ops[j].Return
		for _, o := range outages {
			if o.From <= from+bound && o.To >= ops[j].Call {
				from = max(from, o.To)
			}
		}
		ops[j].Return = min(from+bound, never)
	}
	for _, j := range pending {
		if j > 0 {
			ops[j-1].Return = never
		}
	}
	return ops
}

// LateBound is how long after its error a failed request to a remote
// server may still take effect, for a lease of d: two leases and a second.
// It is an assumption, stated: an etcd write carries an etcd lease granted
// in the same call, whose TTL (the lease and its margin, rounded up to a
// whole second) ends its chance to apply; a server that was paused or
// away applies what it had read within moments of running again; a
// request older than that is taken to be lost. Bounding it keeps
// porcupine's search from doubling with every failed request of a long
// run, and keeps a failed write from explaining a stale read long after.
func LateBound(d time.Duration) time.Duration { return 2*d + time.Second }
