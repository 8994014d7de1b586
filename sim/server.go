package sim

import (
	"context"
	"fmt"
	"io/fs"
	"slices"
	"syscall"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

// A server is the simulator's model of a lease server (Redis, etcd, a SQL
// database) holding one lease: an atomic register that stamps versions
// from a counter that never goes back (Redis's INCR'd key, etcd's
// revision, the SQL row's version column) and expires a record itself
// when its TTL, on the server's clock, runs out: etcd's lessor counts on
// the monotonic clock (true time); Redis's PX and the SQL store's
// clock_timestamp() count on the machine's wall clock, which a step
// (Jump) moves, so that a step forward expires their record early (a
// probe, with an LD_PRELOAD that stepped a real server's clock: until
// 2026-12-05 the model counted true time for all three, and a check with
// jumps could not see it). Each
// operation is one request: it takes effect at one instant, a scheduling
// point of the calling process, like a system call.
type server struct {
	kind    string
	key     string // kind and lease name: what the partial-order reduction knows it by
	rec     lease.Record
	present bool // a live record (not released, not expired)
	// released: the last record went by a release (not an expiry or a
	// loss of the server's data).
	released bool
	expires  int64 // true time at which the server drops rec (etcd)
	// written is when rec was written, and until when, on the server's
	// own clock (serverClock), it drops it.
	written, until int64
	counter        int64
	// life is the incarnation of the server's data (lease.Record's
	// Incarnation) that its records carry, 0 while it has none: the
	// stores keep it beside the record (etcd's and Redis's in a key of its
	// own, the SQL store's in the row), which the first write that finds
	// none makes and nothing deletes, so that only a loss of the data
	// ends it. lives counts the incarnations made, losses included, so
	// that no two are alike (a real store draws each at random).
	life, lives uint64
	// subs are the clients subscribed to the record's changes (their
	// watchers took a change token), in the order they subscribed.
	subs []*remote
}

// serverOf returns the world's server of kind for the lease name, made on
// first use.
func (w *World) serverOf(kind, name string) *server {
	for _, s := range w.servers {
		if s.kind == kind && s.name == name {
			return s.server
		}
	}
	s := &server{kind: kind, key: kind + "\x00" + name}
	w.servers = append(w.servers, namedServer{kind, name, s})
	// Made by the step that first dials it: a death before that step
	// touches no server, one after it touches this one (porKill), so the
	// two steps are dependent (a probe: two orders of a kill and the
	// first dial, the traces alike, named apart).
	w.touch(objKey{kind: objServer, s: s.key}, true)
	return s
}

type namedServer struct {
	kind, name string
	server     *server
}

// dial is the process's connection to the world's
// server of kind for the lease called name.
func (p *proc) dial(kind, name string) (lease.Store, error) {
	if !slices.Contains(ServerKinds, kind) {
		return nil, fmt.Errorf("no server kind %q (valid: %v)", kind, ServerKinds)
	}
	r := &remote{p: p, s: p.w.serverOf(kind, name), name: kind + ":" + name}
	r.key = fmt.Sprintf("%s#%d", r.name, p.idx)
	r.poll = p.w.cfg.ProcLease(p.idx).WatchInterval
	return r, nil
}

// remote is a process's client of a server.
type remote struct {
	p    *proc
	s    *server
	name string
	// key names the client's notices in the world's change counts, as a
	// directory names a file system's.
	key        string
	subscribed bool
	poll       time.Duration // its process's watch interval
}

var _ lease.StoreNotifier = (*remote)(nil)

// ChangeToken implements lease.StoreNotifier: the client subscribes to
// the record's changes at its first token (an etcd watch, a Redis
// SUBSCRIBE, LISTEN), and counts the notices it has had.
func (r *remote) ChangeToken(string) uint64 {
	r.p.w.porCall()
	r.p.w.touch(objKey{kind: objServer, s: r.s.key}, true)
	if !r.subscribed {
		r.subscribed = true
		r.s.subs = append(r.s.subs, r)
	}
	return r.p.w.changesOf(r.key)
}

// Released implements lease.ReleaseHint: the client's latest notice
// announced a release, and came after token.
func (r *remote) Released(token uint64) bool {
	r.p.w.porCall()
	return r.p.w.releasedSince(r.key, token)
}

// WaitChangeContext implements lease.StoreNotifier: a wait for a notice
// after token, until the process's clock reads until, and no longer than
// its watch interval (the poll that bounds what a lost notice costs).
func (r *remote) WaitChangeContext(ctx context.Context, _ string, token uint64, until time.Duration) bool {
	until = min(until, r.p.Mono()+r.poll)
	return r.p.WaitChangeContext(ctx, r.key, token, until)
}

// activeNotice is a Notice fault under way.
type activeNotice struct {
	proc  int
	fate  string
	delay time.Duration
	until int64
}

// noticeFate is the fate of a notice to sub sent now: "" (delivered), or
// that of the latest Notice fault on its process still under way.
func (w *World) noticeFate(sub *remote) (string, time.Duration) {
	for i := len(w.notices) - 1; i >= 0; i-- {
		if n := w.notices[i]; n.proc == sub.p.idx && w.now < n.until {
			return n.fate, n.delay
		}
	}
	return "", 0
}

// early delivers, as a write request is sent, the notices that a Notice
// fault makes come before the change they announce.
func (r *remote) early(release bool) {
	w := r.p.w
	w.touch(objKey{kind: objServer, s: r.s.key}, false) // (its subscribers)
	for _, sub := range r.s.subs {
		if fate, _ := w.noticeFate(sub); fate == "early" && !sub.p.dead {
			w.record(trace.Fault(int16(sub.p.idx), trace.Notice, 0, 0, false,
				w.tr.Str(fmt.Sprintf("notice to pid %d early: before the %s request of pid %d takes effect", sub.p.pid, r.name, r.p.pid))))
			w.notifyKey(sub.key, release)
		}
	}
}

// announce sends every client subscribed to s the notice of the change
// that version (0: a release, or etcd's expiry) made, each meeting its
// fate. An expiry is no request, so it has no early notice: for it, the
// fate "early" is on time.
func (w *World) announce(s *server, version int64, expiry bool) {
	for _, sub := range s.subs {
		if sub.p.dead {
			continue
		}
		fate, delay := w.noticeFate(sub)
		if expiry && fate == "early" {
			fate = ""
		}
		if fate != "" && fate != "early" {
			what := fmt.Sprintf("notice of version %d to pid %d %s", version, sub.p.pid, fate)
			if version == 0 {
				what = fmt.Sprintf("notice of the release to pid %d %s", sub.p.pid, fate)
			}
			if delay > 0 {
				what += " by " + delay.String()
			}
			w.record(trace.Fault(int16(sub.p.idx), trace.Notice, 0, 0, false, w.tr.Str(what)))
		}
		release := version == 0
		switch fate {
		case "":
			w.notifyKey(sub.key, release)
		case "delayed":
			w.faults = insertFault(w.faults, Fault{At: time.Duration(w.now) + delay, deliver: sub, release: release})
		case "duplicated":
			w.notifyKey(sub.key, release)
			w.faults = insertFault(w.faults, Fault{At: time.Duration(w.now) + delay, deliver: sub, release: release})
		}
	}
}

// call makes one request. An injected error (a dropped connection) may
// come before the request reached the server or after it took effect: the
// run chooses, so the caller cannot know, as over a real network; the
// call then returns sent, what a write sent (lease.Store).
func (r *remote) call(op string, sent lease.Record, apply func(now int64) (lease.Record, error)) (lease.Record, error) {
	p := r.p
	write := op != "read"
	if write && len(p.w.notices) > 0 {
		r.early(op == "release")
	}
	a, inj := p.enter(trace.OpRPC, 0)
	p.w.touch(objKey{kind: objServer, s: r.s.key}, true)
	refused := false // a full server: the write fails before it takes effect
	switch st := &p.w.stretches; {
	case inj != 0:
	case st.eio > 0:
		inj = syscall.EIO // the server unreachable: see Fault
	case write && st.full+st.blocks+st.inodes > 0:
		inj, refused = syscall.ENOSPC, true
	}
	var rec lease.Record
	var err error
	if inj == 0 || !refused && p.w.choose.Choose(2) == 0 {
		if p.w.expireServer(r.s) {
			// The register changed at the expiry instant, before this
			// request: the trace says so, for the linearizability check.
			p.w.record(trace.Expiry(int16(p.idx), int16(a.id), r.s.rec, r.s.expires))
		}
		rec, err = apply(p.w.now)
		if write && err == nil && len(r.s.subs) > 0 {
			p.w.announce(r.s, rec.Version, false)
		}
		if write && err == nil && r.s.kind == "etcd" && r.s.present {
			// etcd's watch has a DELETE event when the record's etcd
			// lease expires: the server drops it at that instant, not at
			// the next request, and tells its watchers.
			p.w.faults = insertFault(p.w.faults, Fault{At: time.Duration(r.s.expires), expire: r.s})
		}
	}
	if inj != 0 {
		rec, err = sent, &fs.PathError{Op: op, Path: r.name, Err: inj}
	}
	res := "ok"
	switch {
	case err != nil:
		res = err.Error()
	case op != "release":
		res = fmt.Sprintf("{%d epoch %d version %d}", rec.Holder, rec.Epoch, rec.Version)
	}
	var flag int32
	if write {
		flag = trace.RPCWrite
	}
	e := p.call(a, trace.OpRPC)
	e.Flag, e.Path, e.Data, e.Errno = flag, p.w.tr.Str(r.name+" "+op), p.w.tr.Str(res), errno(err)
	p.done(e)
	return rec, err
}

// expireNow is etcd's expiry of the record whose TTL ends at at, if it is
// still the server's: the record goes, and the watchers are told (a
// DELETE event, which lease.ReleaseHint counts as a release). The model
// expires at the TTL's very end; a real etcd's lessor checks about every
// 500 ms and revokes through a Raft proposal, so a real expiry comes up to
// that much later: the model's is the earliest, the side where exclusive
// leadership could fail, and the side where a crash's failover is fastest.
func (w *World) expireNow(s *server, at int64) {
	if !s.present || s.expires != at {
		return // renewed, released or replaced since
	}
	s.present = false
	w.touch(objKey{kind: objServer, s: s.key}, true)
	w.record(trace.Expiry(-1, -1, s.rec, s.expires))
	w.announce(s, 0, true)
}

// loseServerData restarts every server of kind ("": of every kind)
// without its data (a Lose fault; Fault.lose in a test).
func (w *World) loseServerData(kind string) {
	for _, ns := range w.servers {
		if s := ns.server; s.kind == kind || kind == "" {
			s.present, s.counter, s.released, s.life = false, 0, false, 0
			w.touch(objKey{kind: objServer, s: s.key}, true)
			for _, sub := range s.subs {
				if !sub.p.dead {
					w.notifyKey(sub.key, false)
				}
			}
		}
	}
}

// expireServer drops s's record if its TTL ran out on the server's clock
// by now, and reports whether it did; s.expires is then the true time at
// which it ran out: the first instant since the write at which the
// server's clock read s.until (a step back later does not revive it).
func (w *World) expireServer(s *server) bool {
	if !s.present {
		return false
	}
	at := w.serverReach(s.kind, s.written, s.until)
	if at > w.now {
		return false
	}
	s.present, s.expires = false, at
	return true
}

// serverClock is a server's clock at true time t: true time for etcd,
// whose lessor counts on the monotonic clock; for Redis and SQL, the
// machine's wall clock, less its base: true time plus every step up to t.
func (w *World) serverClock(kind string, t int64) int64 {
	if kind == "etcd" {
		return t
	}
	c := t
	for _, st := range w.steps {
		if st.t <= t {
			c += st.delta
		}
	}
	return c
}

// serverReach is the first true time at or after from at which a
// server's clock reads c or more, given the steps so far (a later one
// may make it earlier: call it again).
func (w *World) serverReach(kind string, from, c int64) int64 {
	if kind == "etcd" {
		return max(from, c)
	}
	sum := w.serverClock(kind, from) - from
	cur := from
	for _, st := range w.steps { // (in the order they fired: by true time)
		if st.t <= from {
			continue
		}
		if at := max(cur, c-sum); at < st.t {
			return at
		}
		cur, sum = st.t, sum+st.delta
	}
	return max(cur, c-sum)
}

// write makes rec, which its client sent, the server's record, with the
// next version, dropped once ttl has passed on the server's clock.
func (w *World) serverWrite(s *server, rec lease.Record, ttl time.Duration) lease.Record {
	s.counter++
	rec.Version = s.counter
	if s.life == 0 {
		s.lives++
		s.life = s.lives
	}
	rec.Incarnation = s.life
	d := int64(ServerTTL(s.kind, ttl))
	s.rec, s.present, s.written, s.released = rec, true, w.now, false
	s.expires, s.until = w.now+d, w.serverClock(s.kind, w.now)+d
	return rec
}

// sent is the record a client's write sends for holder: the lease it
// held, in whole ms rounded up, as the real stores' values and rows keep
// it (lease.StatedTTL), and a nonce the client chose, as a real client
// draws one at random (lease.NewNonce). Its process counts its writes,
// and no process shares its index: a nonce never repeats, a loss of the
// server's data and a restart of the process included, and depends on
// no other process's steps.
func (r *remote) sent(holder int64, ttl time.Duration) lease.Record {
	p := r.p
	p.writes++
	return lease.Record{Holder: holder, TTL: lease.StatedTTL(ttl), Nonce: uint64(p.idx+1)<<40 | p.writes}
}

// sameRecord is the servers' compare: the whole value (holder, epoch,
// version, nonce), as the real stores' scripts and transactions compare
// it. A version alone is unique while the server keeps its data; after it
// loses it, versions repeat (a review: the old leader's renewal by version
// alone succeeded over another process's record), and so may holder and
// epoch; the nonce does not.
func sameRecord(cur, want lease.Record) bool {
	return cur.Version == want.Version && cur.Holder == want.Holder && cur.Epoch == want.Epoch && cur.Nonce == want.Nonce
}

func (r *remote) notFound() error {
	return &fs.PathError{Op: "read", Path: r.name, Err: syscall.ENOENT}
}

// Read implements lease.Store. Redis's and the SQL store's say how their
// last record went, where they had one: a release (lease.ErrReleased) or
// an expiry (lease.ErrVanished); etcd's do not.
func (r *remote) Read() (lease.Record, error) {
	return r.call("read", lease.Record{}, func(int64) (lease.Record, error) {
		switch {
		case r.s.present:
			return r.s.rec, nil
		case r.s.kind == "etcd" || r.s.counter == 0:
		case r.s.released:
			return lease.Record{}, &fs.PathError{Op: "read", Path: r.name, Err: lease.ErrReleased}
		default:
			return lease.Record{}, &fs.PathError{Op: "read", Path: r.name, Err: &lease.VanishedError{Version: r.s.rec.Version, TTL: r.s.rec.TTL, Nonce: r.s.rec.Nonce}}
		}
		return lease.Record{}, r.notFound()
	})
}

var _ lease.Vanishing = (*remote)(nil)

// Vanishes implements lease.Vanishing: Redis and SQL expire records on
// the machine's wall clock (serverClock); etcd on its monotonic one.
func (r *remote) Vanishes() bool { return r.s.kind != "etcd" }

// Create implements lease.Store: insert if absent (SET NX, a transaction
// on the key's create revision, INSERT or UPDATE of a released or expired
// row). The epoch is the new version. Redis's and the SQL store's say
// which record it replaced went without a release (Record.Vanished), as
// their Read does; etcd's do not.
func (r *remote) Create(holder int64, ttl time.Duration) (lease.Record, error) {
	sent := r.sent(holder, ttl)
	return r.call("create", sent, func(int64) (lease.Record, error) {
		if r.s.present {
			return lease.Record{}, &fs.PathError{Op: "create", Path: r.name, Err: syscall.EEXIST}
		}
		var gone int64
		var goneTTL time.Duration
		var goneNonce uint64
		if r.s.kind != "etcd" && r.s.counter > 0 && !r.s.released {
			gone, goneTTL, goneNonce = r.s.rec.Version, r.s.rec.TTL, r.s.rec.Nonce
		}
		// The new record states the longer lease of the two, and lives
		// that much longer (lease.RaisedTTL), as Redis's and SQL's do.
		if raised := lease.RaisedTTL(ttl, goneTTL); raised != sent.TTL {
			sent.TTL, ttl = raised, raised
		}
		rec := r.p.w.serverWrite(r.s, sent, ttl)
		rec.Epoch = rec.Version
		r.s.rec = rec
		rec.Vanished, rec.VanishedTTL, rec.VanishedNonce = gone, goneTTL, goneNonce // (the create's answer, not the record's)
		return rec, nil
	})
}

// Renew implements lease.Store: compare-and-set on the record (sameRecord).
func (r *remote) Renew(cur lease.Record, ttl time.Duration) (lease.Record, error) {
	sent := r.sent(cur.Holder, ttl)
	return r.call("renew", sent, func(int64) (lease.Record, error) {
		if !r.s.present || !sameRecord(r.s.rec, cur) {
			return lease.Record{}, lease.ErrConflict
		}
		rec := sent
		rec.Epoch = r.s.rec.Epoch
		return r.p.w.serverWrite(r.s, rec, ttl), nil
	})
}

// Takeover implements lease.Store: compare-and-set on the record, with a
// new epoch. A record the server has already expired is gone: a conflict,
// after which the caller reads nothing and creates.
func (r *remote) Takeover(stale lease.Record, holder int64, ttl time.Duration) (lease.Record, error) {
	sent := r.sent(holder, ttl)
	return r.call("takeover", sent, func(int64) (lease.Record, error) {
		if !r.s.present || !sameRecord(r.s.rec, stale) {
			return lease.Record{}, lease.ErrConflict
		}
		rec := r.p.w.serverWrite(r.s, sent, ttl)
		rec.Epoch = rec.Version
		r.s.rec = rec
		return rec, nil
	})
}

// Release implements lease.Store: compare-and-delete on the record. The
// counter goes on (Redis's counter key and etcd's revision outlive the
// record; the SQL row keeps its version), so no epoch is ever reused.
func (r *remote) Release(cur lease.Record) error {
	_, err := r.call("release", lease.Record{}, func(int64) (lease.Record, error) {
		if !r.s.present || !sameRecord(r.s.rec, cur) {
			return lease.Record{}, lease.ErrConflict
		}
		r.s.counter++
		r.s.present, r.s.released = false, true
		return lease.Record{}, nil
	})
	return err
}
