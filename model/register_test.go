package model

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/scenario"
	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/trace"
)

// Records of the hand-written histories: 100's lease, 100's renewal of it,
// and the leases 200 and 300 take over with.
var (
	a  = lease.Record{Holder: 100, Until: 1760476487}
	a2 = lease.Record{Holder: 100, Until: 1760476490}
	b  = lease.Record{Holder: 200, Until: 1760476499}
	c  = lease.Record{Holder: 300, Until: 1760476499}
)

// A versioned store's records: 100 acquires at version 1 (epoch 1) and
// renews to version 2; v1wrong is version 1 with another epoch.
var (
	v1      = lease.Record{Holder: 100, Epoch: 1, Version: 1}
	v2      = lease.Record{Holder: 100, Epoch: 1, Version: 2}
	v1wrong = lease.Record{Holder: 100, Epoch: 7, Version: 1}
)

// Calls.
func read() Input                  { return Input{Op: trace.StoreRead} }
func create(h int64) Input         { return Input{Op: trace.StoreCreate, Holder: h} }
func renew(cur lease.Record) Input { return Input{Op: trace.StoreRenew, Rec: cur, Holder: cur.Holder} }
func release(cur lease.Record) Input {
	return Input{Op: trace.StoreRelease, Rec: cur, Holder: cur.Holder}
}
func takeover(stale lease.Record, h int64) Input {
	return Input{Op: trace.StoreTakeover, Rec: stale, Holder: h}
}

// Returns.
func ok(r lease.Record) Output    { return Output{Res: trace.ResOK, Rec: r} }
func res(r trace.StoreRes) Output { return Output{Res: r} }

// op is an operation of client cl over [call, ret].
func op(cl int, call, ret int64, in Input, out Output) porcupine.Operation {
	return porcupine.Operation{ClientId: cl, Input: in, Call: call, Output: out, Return: ret}
}

// never is the return time of an operation that never returned.
const never = 1000

func TestHistories(t *testing.T) {
	tests := []history{
		// Records are compared whole: holder, expiry, epoch and version.
		{"versioned: read sees the renewal", []porcupine.Operation{
			op(0, 0, 10, create(100), ok(v1)),
			op(0, 20, 30, renew(v1), ok(v2)),
			op(1, 40, 50, read(), ok(v2)),
		}, true},
		{"versioned: read sees a wrong epoch", []porcupine.Operation{
			op(0, 0, 10, create(100), ok(v1)),
			op(1, 20, 30, read(), ok(v1wrong)),
		}, false},
		{"versioned: renew of a record with a wrong epoch succeeds", []porcupine.Operation{
			op(0, 0, 10, create(100), ok(v1)),
			op(0, 20, 30, renew(v1wrong), ok(v2)),
		}, false},
		// Read.
		{"read sees the created record", []porcupine.Operation{
			op(0, 0, 10, create(100), ok(a)),
			op(1, 20, 30, read(), ok(a)),
		}, true},
		{"read before any create finds nothing", []porcupine.Operation{
			op(0, 0, 10, read(), res(trace.ResNotFound)),
			op(1, 20, 30, create(100), ok(a)),
		}, true},
		// A watcher misses a lease that was published before it looked.
		{"read after a create finds nothing", []porcupine.Operation{
			op(0, 0, 10, create(100), ok(a)),
			op(1, 20, 30, read(), res(trace.ResNotFound)),
		}, false},
		// A read returns a record nobody wrote.
		{"read sees a record never written", []porcupine.Operation{
			op(0, 0, 10, create(100), ok(a)),
			op(1, 20, 30, read(), ok(b)),
		}, false},
		// (a) The post's empty-file window: a watcher reads the lock file
		// between the leader's O_EXCL create and its write. No register
		// state is an empty record, whatever the order.
		{"read sees a corrupt record during a create", []porcupine.Operation{
			op(0, 0, 30, create(100), ok(a)),
			op(1, 10, 20, read(), res(trace.ResCorrupt)),
		}, false},
		// A read that failed with an I/O error says nothing.
		{"read with an unknown outcome", []porcupine.Operation{
			op(0, 0, 10, create(100), ok(a)),
			op(1, 20, 30, read(), res(trace.ResUnknown)),
		}, true},

		// Create.
		// (legal) Two processes start at once; O_EXCL lets one win.
		{"overlapping creates, the first called wins", []porcupine.Operation{
			op(0, 0, 20, create(100), ok(a)),
			op(1, 5, 25, create(200), res(trace.ResExists)),
		}, true},
		{"overlapping creates, the second called wins", []porcupine.Operation{
			op(0, 0, 20, create(100), res(trace.ResExists)),
			op(1, 5, 25, create(200), ok(b)),
		}, true},
		// The post's first attempt (stat, then create): both see no file
		// and both create it.
		{"two creates both succeed", []porcupine.Operation{
			op(0, 0, 20, create(100), ok(a)),
			op(1, 5, 25, create(200), ok(b)),
		}, false},
		// O_EXCL fails on an empty directory.
		{"create finds a record in an empty register", []porcupine.Operation{
			op(0, 0, 10, create(100), res(trace.ResExists)),
		}, false},
		// O_EXCL creates the caller's record, no one else's.
		{"create writes another holder's record", []porcupine.Operation{
			op(0, 0, 10, create(100), ok(b)),
		}, false},
		// (legal) The post's crash between O_EXCL create and write, in a
		// store that honours the contract: the dying create may have
		// published a record for 100 with an expiry nobody saw; a later
		// read of 100's record fixes it.
		{"create whose process died, then a read of its record", []porcupine.Operation{
			op(0, 0, never, create(100), res(trace.ResUnknown)),
			op(1, 100, 110, create(200), res(trace.ResExists)),
			op(1, 120, 130, read(), ok(a)),
			op(1, 140, 150, read(), ok(a)),
		}, true},
		// ... but once read, the wildcard expiry is fixed.
		{"create whose process died, then reads of two expiries", []porcupine.Operation{
			op(0, 0, never, create(100), res(trace.ResUnknown)),
			op(1, 120, 130, read(), ok(a)),
			op(1, 140, 150, read(), ok(a2)),
		}, false},
		// ... nor can it have written another holder's record.
		{"create whose process died, then a read of another holder", []porcupine.Operation{
			op(0, 0, never, create(100), res(trace.ResUnknown)),
			op(1, 120, 130, read(), ok(b)),
		}, false},
		// ... and it may not have happened at all.
		{"create whose process died, then a read of nothing", []porcupine.Operation{
			op(0, 0, never, create(100), res(trace.ResUnknown)),
			op(1, 120, 130, read(), res(trace.ResNotFound)),
		}, true},

		// Renew.
		// The leader's renew loop: read its record, rewrite it.
		{"renew of the current record", []porcupine.Operation{
			op(0, 0, 10, create(100), ok(a)),
			op(0, 20, 30, read(), ok(a)),
			op(0, 30, 40, renew(a), ok(a2)),
			op(1, 50, 60, read(), ok(a2)),
		}, true},
		// The renew compare must fail on a record that is not current.
		{"renew conflicts on the current record", []porcupine.Operation{
			op(0, 0, 10, create(100), ok(a)),
			op(0, 20, 30, renew(a), res(trace.ResConflict)),
		}, false},
		{"renew conflicts after a takeover", []porcupine.Operation{
			op(0, 0, 10, create(100), ok(a)),
			op(1, 20, 30, takeover(a, 200), ok(b)),
			op(0, 40, 50, renew(a), res(trace.ResConflict)),
		}, true},
		// (c) The seed's renew without a compare: 100 reads its record, 200
		// takes the lease over, and 100's renew of its old record succeeds,
		// overwriting 200's lease.
		{"renew overwrites a newer holder", []porcupine.Operation{
			op(0, 0, 10, create(100), ok(a)),
			op(0, 20, 30, read(), ok(a)),
			op(1, 40, 50, takeover(a, 200), ok(b)),
			op(0, 60, 70, renew(a), ok(a2)),
		}, false},
		// A renew must keep its holder.
		{"renew writes another holder", []porcupine.Operation{
			op(0, 0, 10, create(100), ok(a)),
			op(0, 20, 30, renew(a), ok(b)),
		}, false},
		// A renew that failed part-way may have written 100's record with
		// an unknown expiry.
		{"renew with an unknown outcome, then a read", []porcupine.Operation{
			op(0, 0, 10, create(100), ok(a)),
			op(0, 20, 30, renew(a), res(trace.ResUnknown)),
			op(1, 40, 50, read(), ok(a2)),
		}, true},

		// Takeover.
		// A watcher replaces the expired lease.
		{"takeover of the current record", []porcupine.Operation{
			op(0, 0, 10, create(100), ok(a)),
			op(1, 20, 30, read(), ok(a)),
			op(1, 30, 40, takeover(a, 200), ok(b)),
			op(2, 50, 60, read(), ok(b)),
		}, true},
		// (b) The post's takeover race: two watchers read the same expired
		// lease and both take it over, overlapping or not.
		{"two takeovers of one stale record", []porcupine.Operation{
			op(0, 0, 10, create(100), ok(a)),
			op(1, 20, 50, takeover(a, 200), ok(b)),
			op(2, 30, 60, takeover(a, 300), ok(c)),
		}, false},
		{"two takeovers of one stale record, one after the other", []porcupine.Operation{
			op(0, 0, 10, create(100), ok(a)),
			op(1, 20, 30, takeover(a, 200), ok(b)),
			op(2, 40, 50, takeover(a, 300), ok(c)),
		}, false},
		// The same race in a correct store: O_EXCL decides, the loser
		// conflicts.
		{"two takeovers of one stale record, one conflicts", []porcupine.Operation{
			op(0, 0, 10, create(100), ok(a)),
			op(1, 20, 50, takeover(a, 200), res(trace.ResConflict)),
			op(2, 30, 60, takeover(a, 300), ok(c)),
		}, true},
		// The takeover compare must not fail on the stale record itself.
		{"takeover conflicts on the current record", []porcupine.Operation{
			op(0, 0, 10, create(100), ok(a)),
			op(1, 20, 30, takeover(a, 200), res(trace.ResConflict)),
		}, false},
		// (legal) A watcher reads while another takes over: it may see
		// either lease.
		{"takeover concurrent with a read of the old record", []porcupine.Operation{
			op(0, 0, 10, create(100), ok(a)),
			op(1, 20, 50, takeover(a, 200), ok(b)),
			op(2, 30, 40, read(), ok(a)),
		}, true},
		{"takeover concurrent with a read of the new record", []porcupine.Operation{
			op(0, 0, 10, create(100), ok(a)),
			op(1, 20, 50, takeover(a, 200), ok(b)),
			op(2, 30, 40, read(), ok(b)),
		}, true},
		// The seed's takeover removes the file first: a concurrent read
		// that finds nothing saw a state the register never has.
		{"takeover concurrent with a read of nothing", []porcupine.Operation{
			op(0, 0, 10, create(100), ok(a)),
			op(1, 20, 50, takeover(a, 200), ok(b)),
			op(2, 30, 40, read(), res(trace.ResNotFound)),
		}, false},
		// A takeover whose process died may have published 200's lease.
		{"takeover whose process died, then a read of its record", []porcupine.Operation{
			op(0, 0, 10, create(100), ok(a)),
			op(1, 20, never, takeover(a, 200), res(trace.ResUnknown)),
			op(2, 40, 50, read(), ok(b)),
		}, true},

		// Release.
		// SIGTERM: the leader deletes its lease; a watcher creates its own.
		{"release of the current record", []porcupine.Operation{
			op(0, 0, 10, create(100), ok(a)),
			op(1, 20, 30, release(a), ok(lease.Record{})),
			op(2, 40, 50, read(), res(trace.ResNotFound)),
			op(2, 50, 60, create(200), ok(b)),
		}, true},
		// The seed's release removes by name: a leader whose lease was
		// taken over deletes the new holder's.
		{"release of a record taken over", []porcupine.Operation{
			op(0, 0, 10, create(100), ok(a)),
			op(1, 20, 30, takeover(a, 200), ok(b)),
			op(0, 40, 50, release(a), ok(lease.Record{})),
		}, false},
		{"release conflicts after a takeover", []porcupine.Operation{
			op(0, 0, 10, create(100), ok(a)),
			op(1, 20, 30, takeover(a, 200), ok(b)),
			op(0, 40, 50, release(a), res(trace.ResConflict)),
			op(1, 60, 70, read(), ok(b)),
		}, true},
		{"release conflicts on the current record", []porcupine.Operation{
			op(0, 0, 10, create(100), ok(a)),
			op(0, 20, 30, release(a), res(trace.ResConflict)),
		}, false},
		// A release interrupted by a kill may or may not have deleted.
		{"release with an unknown outcome, then a read of nothing", []porcupine.Operation{
			op(0, 0, 10, create(100), ok(a)),
			op(1, 20, never, release(a), res(trace.ResUnknown)),
			op(2, 40, 50, read(), res(trace.ResNotFound)),
		}, true},
	}
	checkHistories(t, tests)
}

// history is a hand-written history and whether the register must find it
// linearizable.
type history struct {
	name string
	ops  []porcupine.Operation
	want bool
}

// checkHistories checks each history against the register.
func checkHistories(t *testing.T, tests []history) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := CheckOps(tt.ops, 0, time.Second)
			if r.Unknown {
				t.Fatal("check timed out")
			}
			if r.Linearizable != tt.want {
				t.Errorf("linearizable = %v, want %v (%v)", r.Linearizable, tt.want, r.Err())
			}
		})
	}
}

// The culprit of the takeover race is the second takeover to return.
func TestCulprit(t *testing.T) {
	ops := []porcupine.Operation{
		op(0, 0, 10, create(100), ok(a)),
		op(1, 20, 50, takeover(a, 200), ok(b)),
		op(2, 30, 60, takeover(a, 300), ok(c)),
		op(0, 70, 80, read(), ok(c)),
	}
	r := CheckOps(ops, 0, time.Second)
	got, found := r.Culprit()
	if !found {
		t.Fatalf("no culprit; linearizable %v", r.Linearizable)
	}
	if got.Input != ops[2].Input {
		t.Errorf("culprit %s, want %s", r.Describe(got), r.Describe(ops[2]))
	}
	want := "store not linearizable: takeover({100 1760476487}) by 300 → ok {300 1760476499} at 0.000000s"
	if err := r.Err(); err == nil || err.Error() != want {
		t.Errorf("Err() = %v, want %s", err, want)
	}
	if _, found := CheckOps(ops[:2], 0, time.Second).Culprit(); found {
		t.Error("a linearizable history has a culprit")
	}
}

func TestDescribe(t *testing.T) {
	for _, tt := range []struct {
		in   Input
		out  Output
		want string
	}{
		{takeover(a, 200), ok(b), "takeover({100 1760476487}) by 200 → ok {200 1760476499}"},
		{read(), res(trace.ResCorrupt), "read → corrupt"},
		{read(), ok(a), "read → ok {100 1760476487}"},
		{create(100), res(trace.ResExists), "create by 100 → exists"},
		{renew(a), ok(a2), "renew({100 1760476487}) → ok {100 1760476490}"},
		{release(a), ok(lease.Record{}), "release({100 1760476487}) → ok"},
		{release(a), res(trace.ResUnknown), "release({100 1760476487}) → unknown"},
	} {
		if got := Register.DescribeOperation(tt.in, tt.out); got != tt.want {
			t.Errorf("DescribeOperation = %q, want %q", got, tt.want)
		}
	}
	for _, tt := range []struct {
		s    State
		want string
	}{
		{State{}, "empty"},
		{record(b), "{200 1760476499} until 21:14:59"},
		{record(v1), "{100 epoch 1 version 1}"},
		{wild(200, 0), "{200 ?}"},
		{wild(200, 4), "{200 ?, above version 4}"},
	} {
		if got := describeState(tt.s); got != tt.want {
			t.Errorf("describeState(%+v) = %q, want %q", tt.s, got, tt.want)
		}
	}
}

// Equal states hash equally; the wildcard differs from every record.
func TestEqualHash(t *testing.T) {
	m := nondeterministic
	states := []State{{}, record(a), record(a2), record(b), wild(100, 0), wild(200, 0), wild(200, 3)}
	for i, s := range states {
		for j, u := range states {
			if m.Equal(s, u) != (i == j) {
				t.Errorf("Equal(%v, %v) = %v", s, u, !(i == j))
			}
			if i != j && m.Hash(s) == m.Hash(u) {
				t.Errorf("Hash(%v) == Hash(%v)", s, u)
			}
		}
		if m.Hash(s) != m.Hash(State{Present: s.Present, Wild: s.Wild, Rec: s.Rec}) {
			t.Errorf("Hash(%v) is not a function of the state", s)
		}
	}
}

func runScenario(t *testing.T, name string) *trace.Trace {
	t.Helper()
	s, err := scenario.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Run(scenario.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Trace == nil {
		t.Fatalf("scenario %s has no trace", name)
	}
	return r.Trace
}

func TestScenarios(t *testing.T) {
	for _, tt := range []struct {
		name string
		want bool
	}{
		{"steady", true},
		{"kill-leader", true},
		{"term-leader", true},
		// Both watchers' takeovers of the dead leader's lease succeed.
		{"takeover-race", false},
		// The lock file is empty before anyone starts: no register state
		// is, so the first create's Exists is already illegal.
		{"empty-file", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := Check(runScenario(t, tt.name), 10*time.Second)
			if r.Unknown {
				t.Fatal("check timed out")
			}
			if len(r.Ops()) == 0 {
				t.Fatal("no store operations in the trace")
			}
			if r.Linearizable != tt.want {
				t.Errorf("linearizable = %v, want %v (%v)", r.Linearizable, tt.want, r.Err())
			}
			if tt.name == "takeover-race" {
				msg := fmt.Sprint(r.Err())
				if !strings.Contains(msg, "/watch takeover(") || !strings.Contains(msg, "→ ok") {
					t.Errorf("error %q does not name a watcher's successful takeover", msg)
				}
			}
		})
	}
}

// The post's empty-file wedge reached by a crash: 100 dies between its
// O_EXCL create and its write; 200's reads find the empty file.
func TestCrashAfterExclCreate(t *testing.T) {
	tr, err := sim.Run(sim.Config{
		Variant: "seed",
		Procs:   []sim.ProcSpec{{PID: 100, Start: 0}, {PID: 200, Start: 100 * time.Millisecond}},
		Faults:  []sim.Fault{{Kind: trace.Kill, Proc: 0, After: "open-excl", Nth: 1}},
		Horizon: 20 * time.Second, SyscallMin: 5 * time.Microsecond, SyscallMax: 50 * time.Microsecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	r := Check(tr, 10*time.Second)
	if r.Linearizable || r.Unknown {
		t.Fatalf("linearizable %v, unknown %v; want a violation", r.Linearizable, r.Unknown)
	}
	got, _ := r.Culprit()
	if w := got.Metadata.(Who); w.PID != 200 || got.Output.(Output).Res != trace.ResCorrupt {
		t.Errorf("culprit %s, want a read by 200 that found the record corrupt", r.Describe(got))
	}
	// 100's create never returned: unknown, after everything else.
	first := r.Ops()[0]
	if first.Input != create(100) || first.Output.(Output).Res != trace.ResUnknown || first.Return <= int64(tr.End) {
		t.Errorf("first operation %s (return %d, end %d), want 100's create, never returned", r.Describe(first), first.Return, tr.End)
	}
}

// FromTrace gives each (process, activity) its own client, in order of
// first appearance, and pairs each call with its return.
func TestFromTrace(t *testing.T) {
	tr := runScenario(t, "term-leader")
	ops := FromTrace(tr)
	clients := map[Who]int{}
	next := 0
	for i, o := range ops {
		w := o.Metadata.(Who)
		id, seen := clients[w]
		if !seen {
			if o.ClientId != next {
				t.Errorf("op %d: %v is client %d, want %d", i, w, o.ClientId, next)
			}
			clients[w] = o.ClientId
			next++
		} else if id != o.ClientId {
			t.Errorf("op %d: %v is client %d, was %d", i, w, o.ClientId, id)
		}
		if o.Return < o.Call || o.Return > int64(tr.End) {
			t.Errorf("op %d: interval [%d, %d] outside the run", i, o.Call, o.Return)
		}
		if i > 0 && o.Call < ops[i-1].Call {
			t.Errorf("op %d called before op %d", i, i-1)
		}
	}
	// The SIGTERM handler's release is its own client.
	if _, ok := clients[Who{PID: 60344, Act: "signal", Name: "60344"}]; !ok {
		t.Errorf("no signal handler client among %v", clients)
	}
}

func TestWriteHTML(t *testing.T) {
	path := filepath.Join(t.TempDir(), "takeover-race.html")
	if err := Check(runScenario(t, "takeover-race"), 10*time.Second).WriteHTML(path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 || !strings.Contains(string(b), "<html") {
		t.Errorf("visualization (%d bytes) is not HTML", len(b))
	}
	// A linearizable history, checked without the verbose search: its
	// view still shows its linearization.
	a := lease.Record{Holder: 1, Until: 1}
	ops := []porcupine.Operation{{ClientId: 0, Input: Input{Op: trace.StoreCreate, Holder: 1}, Call: 0,
		Output: Output{Res: trace.ResOK, Rec: a}, Return: 10}}
	r := CheckOps(ops, 100, time.Second)
	if !r.Linearizable || r.Info.PartialLinearizations() != nil {
		t.Fatalf("a lone create: linearizable %v, partial linearizations %v; want true and none computed", r.Linearizable, r.Info.PartialLinearizations())
	}
	ok := filepath.Join(t.TempDir(), "create.html")
	if err := r.WriteHTML(ok); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(ok); err != nil || !strings.Contains(string(b), "create by 1") {
		t.Errorf("view of a linearizable history: %d bytes, %v; want its operation in it", len(b), err)
	}
}

// A watcher reads the lease 100 created, then 200 takes it over after it
// expires: linearizable. A second takeover of the same lease is not.
func Example() {
	stale := lease.Record{Holder: 100, Until: 1760476487}
	ops := []porcupine.Operation{
		{ClientId: 0, Input: Input{Op: trace.StoreCreate, Holder: 100}, Call: 0,
			Output: Output{Res: trace.ResOK, Rec: stale}, Return: 150_000,
			Metadata: Who{PID: 100, Act: "main"}},
		{ClientId: 1, Input: Input{Op: trace.StoreRead}, Call: 3_100_000_000,
			Output: Output{Res: trace.ResOK, Rec: stale}, Return: 3_100_020_000,
			Metadata: Who{PID: 200, Act: "watch"}},
		{ClientId: 1, Input: Input{Op: trace.StoreTakeover, Rec: stale, Holder: 200}, Call: 12_100_127_445,
			Output: Output{Res: trace.ResOK, Rec: lease.Record{Holder: 200, Until: 1760476499}}, Return: 12_100_308_763,
			Metadata: Who{PID: 200, Act: "watch"}},
	}
	fmt.Println(CheckOps(ops, 0, time.Second).Linearizable)

	second := porcupine.Operation{ClientId: 2, Input: Input{Op: trace.StoreTakeover, Rec: stale, Holder: 300}, Call: 12_100_183_594,
		Output: Output{Res: trace.ResOK, Rec: lease.Record{Holder: 300, Until: 1760476499}}, Return: 12_100_341_558,
		Metadata: Who{PID: 300, Act: "watch"}}
	fmt.Println(CheckOps(append(ops, second), 0, time.Second).Err())
	// Output:
	// true
	// store not linearizable: 300/watch takeover({100 1760476487}) by 300 → ok {300 1760476499} at 12.100341s
}

// A server's expiry is a step of the register: with it, a second create
// is legal; without it (a server whose create-if-absent is broken), the
// history is not linearizable; and only the current record can expire.
func TestExpire(t *testing.T) {
	a := lease.Record{Holder: 1, Until: 1}
	b := lease.Record{Holder: 2, Until: 2}
	create := func(id int, h int64, call, ret int64, rec lease.Record) porcupine.Operation {
		return porcupine.Operation{ClientId: id, Input: Input{Op: trace.StoreCreate, Holder: h}, Call: call,
			Output: Output{Res: trace.ResOK, Rec: rec}, Return: ret}
	}
	expire := func(id int, at int64, rec lease.Record) porcupine.Operation {
		return porcupine.Operation{ClientId: id, Input: Input{Op: trace.StoreExpire, Rec: rec}, Call: at,
			Output: Output{Res: trace.ResOK}, Return: at}
	}
	if r := CheckOps([]porcupine.Operation{create(0, 1, 0, 10, a), create(1, 2, 20, 30, b)}, 100, 0); r.Linearizable {
		t.Error("two creates without an expiry between them linearized")
	}
	if r := CheckOps([]porcupine.Operation{create(0, 1, 0, 10, a), expire(2, 15, a), create(1, 2, 20, 30, b)}, 100, 0); !r.Linearizable {
		t.Error("create, expiry, create did not linearize")
	}
	if r := CheckOps([]porcupine.Operation{create(0, 1, 0, 10, a), expire(2, 15, b), create(1, 2, 20, 30, b)}, 100, 0); r.Linearizable {
		t.Error("the expiry of a record that was not current linearized")
	}
	if r := CheckOps([]porcupine.Operation{create(0, 1, 0, 10, a), create(1, 2, 20, 30, b), expire(2, 35, a)}, 100, 0); r.Linearizable {
		t.Error("an expiry after the second create explained it")
	}
}

// FromTrace keeps store records whole: a history built from a trace sees
// the epoch and version its events carry.
func TestFromTraceKeepsRecordsWhole(t *testing.T) {
	tr := trace.NewRecorded(trace.Run{Variant: "reference", Lease: lease.DefaultConfig()})
	p := int16(tr.AddProc(100, 0))
	call := trace.Event{T: 10, Proc: p, Kind: trace.EvStoreCall, Store: trace.StoreRenew, N: 100}
	call.SetRecord(v1)
	ret := trace.Event{T: 20, Proc: p, Kind: trace.EvStore, Store: trace.StoreRenew, Res: trace.ResOK}
	ret.SetRecord(v2)
	tr.Add(call, "")
	tr.Add(ret, "")
	tr.Finish(30)
	ops := FromTrace(tr)
	if len(ops) != 1 {
		t.Fatalf("%d operations, want 1", len(ops))
	}
	if in, out := ops[0].Input.(Input), ops[0].Output.(Output); in.Rec != v1 || in.Holder != 100 || out.Rec != v2 {
		t.Errorf("renew %+v -> %+v, want %+v -> %+v", in, out, v1, v2)
	}
}

// A remote server's request that failed with an unclassified error may
// take effect after its client gave up, up to LateBound after its error
// (or after the end of a member outage it met): a takeover that timed out
// at 2 s, read back at 5 s after a read at 3 s saw the old record,
// linearizes on a remote server's store; on a local one (the file system,
// SQLite: Run.Remote false), whose failed call has done what it did by
// its return, it does not; nor does it, on a remote one, when the read
// that sees it comes after the bound and another saw the old record
// past the bound; a member outage that the request met moves the bound
// to its end.
func TestFailedServerRequestTakesEffectLate(t *testing.T) {
	old := lease.Record{Holder: 1, Epoch: 1, Version: 1}
	taken := lease.Record{Holder: 2, Epoch: 2, Version: 2}
	s := int64(time.Second)
	bound := int64(LateBound(lease.DefaultConfig().LeaseDuration))
	for _, c := range []struct {
		name         string
		remote       bool
		oldAt, newAt int64 // the reads that see old, then taken
		outageEnd    int64 // a member outage from 1.5 s to this (0: none)
		linearizable bool
	}{
		{"remote", true, 3 * s, 5 * s, 0, true},
		{"local", false, 3 * s, 5 * s, 0, false},
		{"remote, past the bound", true, 2*s + bound + s, 2*s + bound + 2*s, 0, false},
		{"remote, an outage met", true, 2*s + bound + s, 2*s + bound + 2*s, 10 * s, true},
		{"remote, an outage begun within the bound", true, 2*s + bound + 2*s, 2*s + bound + 3*s, 2*s + bound + s, true},
	} {
		tr := trace.NewRecorded(trace.Run{Variant: "reference", Lease: lease.DefaultConfig(), Server: true, Remote: c.remote})
		o := int16(tr.AddProc(1, 0))
		p := int16(tr.AddProc(2, 0))
		q := int16(tr.AddProc(3, 0))
		add := func(e trace.Event, rec lease.Record) {
			e.SetRecord(rec)
			tr.Add(e, "")
		}
		add(trace.Event{T: 1, Proc: o, Kind: trace.EvStoreCall, Store: trace.StoreCreate, N: 1}, lease.Record{})
		add(trace.Event{T: 5, Proc: o, Kind: trace.EvStore, Store: trace.StoreCreate, Res: trace.ResOK}, old)
		add(trace.Event{T: 1 * s, Proc: p, Kind: trace.EvStoreCall, Store: trace.StoreTakeover, N: 2}, old)
		if c.outageEnd > 0 {
			from := 3 * s / 2 // (met by the request)
			if c.outageEnd > 2*s+bound {
				from = 2*s + bound/2 // (begun after its error, within the bound)
			}
			tr.Add(trace.Event{T: from, Proc: -1, Kind: trace.EvFault, N: int64(trace.MemberStop), A: c.outageEnd - from}, "member-stop")
			tr.Add(trace.Event{T: c.outageEnd, Proc: -1, Kind: trace.EvFault, N: int64(trace.End), C: int64(trace.MemberStop)}, "member-stop ends")
		}
		add(trace.Event{T: 2 * s, Proc: p, Kind: trace.EvStore, Store: trace.StoreTakeover, Res: trace.ResUnknown}, lease.Record{})
		add(trace.Event{T: c.oldAt, Proc: q, Kind: trace.EvStoreCall, Store: trace.StoreRead}, lease.Record{})
		add(trace.Event{T: c.oldAt + 1, Proc: q, Kind: trace.EvStore, Store: trace.StoreRead, Res: trace.ResOK}, old)
		add(trace.Event{T: c.newAt, Proc: q, Kind: trace.EvStoreCall, Store: trace.StoreRead}, lease.Record{})
		add(trace.Event{T: c.newAt + 1, Proc: q, Kind: trace.EvStore, Store: trace.StoreRead, Res: trace.ResOK}, taken)
		tr.Finish(time.Duration(c.newAt + 10*s))
		ops := FromTrace(tr)
		if r := CheckOps(ops, int64(tr.End), 0); r.Linearizable != c.linearizable {
			t.Errorf("%s: linearizable %v", c.name, r.Linearizable)
		}
		if c.remote && ops[1].ClientId < 3 {
			t.Errorf("%s: the failed takeover %+v: not on a client of its own", c.name, ops[1])
		}
	}
}

// A write whose outcome is unknown, if it took effect, wrote a version
// above the record it replaced: a later read of its writer's older record
// is no effect of it (found by review: p's takeover of q's record failed
// with an unknown outcome, and a read of p's first record long after was
// explained by it), while a read of a newer record of its writer is.
func TestWildcardIsNewer(t *testing.T) {
	p1 := lease.Record{Holder: 1, Epoch: 1, Version: 1}
	q2 := lease.Record{Holder: 2, Epoch: 2, Version: 2}
	p3 := lease.Record{Holder: 1, Epoch: 3, Version: 3}
	op := func(id int, in Input, call, ret int64, res trace.StoreRes, rec lease.Record) porcupine.Operation {
		return porcupine.Operation{ClientId: id, Input: in, Call: call, Output: Output{Res: res, Rec: rec}, Return: ret}
	}
	for _, c := range []struct {
		read lease.Record
		want bool
	}{{p1, false}, {p3, true}} {
		ops := []porcupine.Operation{
			op(0, Input{Op: trace.StoreCreate, Holder: 1}, 0, 10, trace.ResOK, p1),
			op(1, Input{Op: trace.StoreTakeover, Rec: p1, Holder: 2}, 20, 30, trace.ResOK, q2),
			op(0, Input{Op: trace.StoreTakeover, Rec: q2, Holder: 1}, 40, 50, trace.ResUnknown, lease.Record{}),
			op(2, Input{Op: trace.StoreRead}, 60, 70, trace.ResOK, c.read),
		}
		if r := CheckOps(ops, 100, 0); r.Linearizable != c.want {
			t.Errorf("a read of %+v after the unknown takeover: linearizable %v, want %v", c.read, r.Linearizable, c.want)
		}
	}
}
