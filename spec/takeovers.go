package spec

import (
	"fmt"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

// checkTakeoversBacked is honest-role's watcher-side rule, the
// counterpart of checkDeadlinesBacked: for a variant with a local
// deadline, every takeover must be called at least the lease its stale
// record's writer held (the configured lease of the process the store
// acknowledged that version to, else the shortest of the processes of its
// PID: the checker's own reading, not the algorithm's) after the watcher first
// saw that record, on the watcher's own monotonic clock. The design's
// safety rests on the two rules together (the leader stops at its
// deadline, a watcher waits a whole lease from its first sighting, and
// the drift factor separates them): exclusive-leadership sees a breach of
// this one only when a leader also lives to its deadline and the clocks
// drift apart, both at their worst, within a few tens of milliseconds
// (helper-107: a watcher that waited lease x (1-rho) broke
// exclusive-leadership in 3 of 20,000 runs of the default command over
// the file store, in none over Redis; this rule finds it at every
// takeover).
//
// The first sighting is the earliest read of the process, in the run of
// its reads that returned the stale version (readable or not) up to the
// takeover, with no read of another version, of another record of that
// version, or of no record between;
// its monotonic clock then is bounded below as checkContextsBacked bounds
// it (monoAtEarliest), so that a correct watcher, which starts its clock
// after such a read returns and waits at least the lease its writer
// stated, is never judged late. Its own records (of its PID, and
// acknowledged to no other process: it takes them back at once) are not
// judged; one of its PID that the store acknowledged to another process
// (-faults samepid) is that one's lease. A record it could not read is
// judged by the lease of the writer whose write of that version the store
// acknowledged (a write that returned the record wrote it whole: only a
// power loss tears one), else by the watcher's own lease, the least it
// waits: a probe's VersionedFile that linked the version of a write(2)
// that failed had a 3 s watcher take over a 9 s leader's empty record
// (helper-107: missed by the default command; two leaders in 2 of 20,000
// runs of -faults stop,fserr,diskfull). A loss of the store's data (a
// server's, a power loss's) ends a run of sightings: versions may repeat
// after it.
func checkTakeoversBacked(tr *trace.Trace, v lease.Variant) *Violation {
	if !v.LocalDeadline || tr.Recorded {
		return nil
	}
	rho := fastestDrift(tr)
	// sight[p]: process p's current run of reads of one version, and the
	// first of them (one pass: a spinning process makes many takeovers).
	type run struct {
		version int64
		rec     lease.Record // the run's record, once read readable
		known   bool         // rec was read
		first   int          // the run's first read (-1: none)
	}
	sight := make([]run, len(tr.Procs))
	for p := range sight {
		sight[p].first = -1
	}
	// calls: by process and activity, the index of its pending store call
	// (a trace made by hand may name no activities).
	calls := make([][]int32, len(tr.Procs))
	for q := range min(len(calls), len(tr.Acts)) {
		calls[q] = make([]int32, len(tr.Acts[q]))
	}
	// acked: the process whose write of each version the store
	// acknowledged, since the last loss: its content is whole (a write
	// that failed is not acknowledged), whatever a reader could read of it.
	acked := make(map[int64]int)
	for i := range tr.Events {
		e := &tr.Events[i]
		if e.Kind == trace.EvFault && !e.Missed() && (e.FaultKind() == trace.Lose || e.FaultKind() == trace.Power) {
			for p := range sight {
				sight[p] = run{first: -1} // (versions may repeat after a loss of the store's data)
			}
			clear(acked) // (and a power loss may tear what was written)
			continue
		}
		if e.Proc < 0 {
			continue
		}
		p := int(e.Proc)
		if e.Act < 0 || int(e.Act) >= len(calls[p]) {
			continue
		}
		switch {
		case e.Kind == trace.EvStoreCall:
			calls[p][e.Act] = int32(i)
			continue
		case e.Kind == trace.EvStore && e.Store == trace.StoreRead:
			rec := e.Record()
			sp := &sight[p]
			switch {
			case e.Res == trace.ResNotFound:
				*sp = run{first: -1}
			case e.Res != trace.ResOK && e.Res != trace.ResUnknown || rec.Version == 0:
				// (a failed read that names no version: nothing seen)
			case rec.Version != sp.version || sp.first < 0 ||
				e.Res == trace.ResOK && sp.known && (rec.Holder != sp.rec.Holder || rec.Epoch != sp.rec.Epoch):
				*sp = run{version: rec.Version, rec: rec, known: e.Res == trace.ResOK, first: i}
			case e.Res == trace.ResOK && !sp.known:
				sp.rec, sp.known = rec, true
			}
			continue
		case e.Kind == trace.EvStore && e.Res == trace.ResOK && e.Store.Writes():
			acked[e.Record().Version] = p
			if e.Store != trace.StoreTakeover {
				continue
			}
		case e.Kind != trace.EvStore || e.Store != trace.StoreTakeover:
			continue
		}
		c := int(calls[p][e.Act])
		if e := &tr.Events[c]; e.Kind != trace.EvStoreCall || e.Store != trace.StoreTakeover {
			continue
		}
		stale := tr.Events[c].Record()
		if stale.Holder == 0 {
			continue // none
		}
		// Its own record (taken back at once) is one of its PID that no
		// other process wrote: under -faults samepid another process has
		// that PID, and a version the store acknowledged to it is that
		// process's, a lease to wait out like any other's.
		w, acknowledged := acked[stale.Version]
		ownPID := int64(tr.Procs[p].PID)
		if stale.Holder == ownPID && (!acknowledged || w == p) {
			continue
		}
		ttl := procConfig(tr, p).LeaseDuration
		holder := stale.Holder
		if acknowledged && holder == lease.Unknown {
			holder = int64(tr.Procs[w].PID) // (unreadable, but acknowledged whole)
			if holder == ownPID && w == p {
				continue
			}
		}
		if holder != lease.Unknown {
			// The writer's lease: the process the store acknowledged the
			// version to, if it has the holder's PID; else the shortest of
			// that PID's processes' (with shared PIDs and a rolling change
			// of -lease, the shortest alone let a watcher that waited its
			// own lease escape: helper-109).
			shortest := time.Duration(0)
			if acknowledged && int64(tr.Procs[w].PID) == holder {
				shortest = procConfig(tr, w).LeaseDuration
			} else {
				for q := range tr.Procs {
					if int64(tr.Procs[q].PID) == holder {
						if l := procConfig(tr, q).LeaseDuration; shortest == 0 || l < shortest {
							shortest = l
						}
					}
				}
			}
			if shortest == 0 {
				continue
			}
			ttl = lease.StatedTTL(shortest)
		}
		sp := sight[p]
		if sp.first < 0 || sp.version != stale.Version || sp.known && (sp.rec.Holder != stale.Holder || sp.rec.Epoch != stale.Epoch) {
			continue // (not a record it read: not judged)
		}
		seen := sp.first
		s := &tr.Events[seen]
		m, ok := monoAtEarliest(tr, p, seen+1, s.T, rho)
		if !ok || e.CallMono()-m >= int64(ttl) {
			continue
		}
		return &Violation{Property: HonestRole, At: time.Duration(tr.Events[c].T), PIDs: []int{tr.Procs[p].PID}, Events: []int{seen, c},
			Detail: fmt.Sprintf("process %s took over version %d (held by %d) %v on its clock after it first read it (at %s), less than the %v lease its writer held: a watcher waits a whole lease from its first sighting",
				tr.ProcName(p), stale.Version, stale.Holder, time.Duration(e.CallMono()-m), secs(time.Duration(s.T)), ttl)}
	}
	return nil
}
