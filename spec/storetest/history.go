package storetest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/model"
	"github.com/leaselab/leaselab/trace"
)

// RecordHistory runs clients concurrent clients of one lease (holders 1 to
// clients, each from its own open), each making calls random calls, and
// returns the history for porcupine: every call's input and output in the
// terms of model.Register, with its call and return instants on the
// monotonic clock. Records are kept whole (holder, epoch, version), so the
// check compares them exactly.
//
// A client's calls: Read; Create; Renew and Release of the last record it
// wrote (possibly stale by then); Takeover of the last record it read; and
// now and then Renew of the last record it read (someone else's: the
// contract says that succeeds if the record is still current). An error
// that is none of the contract's outcomes (a timeout, a dropped
// connection) is an unknown outcome: the call may have taken effect at any
// instant after it was made, so it is given a return after every other.
func RecordHistory(open Open, clients, calls int, seed uint64) []porcupine.Operation {
	base := time.Now()
	now := func() int64 { return int64(time.Since(base)) }
	var mu sync.Mutex
	var ops []porcupine.Operation
	var wg sync.WaitGroup
	var start sync.WaitGroup
	start.Add(1)
	stores := make([]lease.Store, clients)
	for i := range stores {
		stores[i] = open(int64(i + 1))
	}
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, me := stores[i], int64(i+1)
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			var mine, seen lease.Record
			var haveMine, haveSeen bool
			start.Wait()
			for range calls {
				in := model.Input{}
				var out lease.Record
				var err error
				switch p := rng.IntN(100); {
				case p < 20 && haveMine:
					in = model.Input{Op: trace.StoreRenew, Rec: mine, Holder: mine.Holder}
				case p < 30 && haveMine:
					in = model.Input{Op: trace.StoreRelease, Rec: mine, Holder: mine.Holder}
				case p < 45 && haveSeen:
					in = model.Input{Op: trace.StoreTakeover, Rec: seen, Holder: me}
				case p < 50 && haveSeen:
					in = model.Input{Op: trace.StoreRenew, Rec: seen, Holder: seen.Holder}
				case p < 75:
					in = model.Input{Op: trace.StoreCreate, Holder: me}
				default:
					in = model.Input{Op: trace.StoreRead}
				}
				call := now()
				switch in.Op {
				case trace.StoreRead:
					out, err = s.Read()
				case trace.StoreCreate:
					out, err = s.Create(me, LongTTL)
				case trace.StoreRenew:
					out, err = s.Renew(in.Rec, LongTTL)
				case trace.StoreTakeover:
					out, err = s.Takeover(in.Rec, me, LongTTL)
				case trace.StoreRelease:
					err = s.Release(in.Rec)
				}
				ret := now()
				res := trace.Classify(in.Op, err)
				if res == trace.ResOK && in.Op == trace.StoreRead && out.Holder == lease.Unknown {
					res = trace.ResUnknown // a version exists; what it holds is not known
				}
				if res != trace.ResOK {
					out = lease.Record{}
				}
				if res == trace.ResUnknown {
					ret = -1 // fixed below: after every other event
				}
				switch {
				case res != trace.ResOK:
				case in.Op == trace.StoreRead:
					seen, haveSeen = out, true
				case in.Op == trace.StoreRelease:
					haveMine = false
				case out.Holder == me:
					mine, haveMine = out, true
				}
				mu.Lock()
				ops = append(ops, porcupine.Operation{
					ClientId: i,
					Input:    in,
					Call:     call,
					Output:   model.Output{Res: res, Rec: out},
					Return:   ret,
					Metadata: errString(err),
				})
				mu.Unlock()
			}
		}()
	}
	start.Done()
	wg.Wait()
	end := now() + 1
	for i := range ops {
		if ops[i].Return < 0 {
			ops[i].Return = end
		}
	}
	return ops
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// CheckHistory checks a history from RecordHistory against
// model.Register, with a timeout of a minute.
func CheckHistory(ops []porcupine.Operation) model.Result {
	var end int64
	for _, op := range ops {
		end = max(end, op.Return)
	}
	return model.CheckOps(ops, end, time.Minute)
}

// Outcomes counts a history's operations by kind and outcome, as
// "create:exists" -> 17.
func Outcomes(ops []porcupine.Operation) map[string]int {
	m := map[string]int{}
	for _, op := range ops {
		m[op.Input.(model.Input).Op.String()+":"+op.Output.(model.Output).Res.String()]++
	}
	return m
}

// writeHTML writes porcupine's view of a failed check beside the test's
// other output (the system's temporary directory: t.TempDir is removed
// when the test ends) and returns its path.
func writeHTML(t *testing.T, res model.Result) string {
	name := strings.NewReplacer("/", "-", " ", "_").Replace(t.Name())
	path := filepath.Join(os.TempDir(), fmt.Sprintf("leaselab-storetest-%s-%d.html", name, time.Now().UnixNano()))
	if err := res.WriteHTML(path); err != nil {
		return "(not written: " + err.Error() + ")"
	}
	return path
}

// culprit describes the first operation of a failed check that could not
// be linearized, with its records in full (model's descriptions show a
// record's holder and expiry only).
func culprit(res model.Result) string {
	op, ok := res.Culprit()
	if !ok {
		return "no culprit"
	}
	in, out := op.Input.(model.Input), op.Output.(model.Output)
	s := fmt.Sprintf("client %d: %v(%+v, holder %d) -> %v %+v", op.ClientId, in.Op, in.Rec, in.Holder, out.Res, out.Rec)
	if e, _ := op.Metadata.(string); e != "" {
		s += " (" + e + ")"
	}
	return s
}
