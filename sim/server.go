package sim

import (
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
// when its TTL, on the server's clock (true time), runs out. Each
// operation is one request: it takes effect at one instant, a scheduling
// point of the calling process, like a system call.
type server struct {
	kind    string
	rec     lease.Record
	present bool  // a live record (not released, not expired)
	expires int64 // true time at which the server drops rec
	counter int64
}

// serverOf returns the world's server of kind for the lease name, made on
// first use.
func (w *World) serverOf(kind, name string) *server {
	for _, s := range w.servers {
		if s.kind == kind && s.name == name {
			return s.server
		}
	}
	s := &server{kind: kind}
	w.servers = append(w.servers, namedServer{kind, name, s})
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
	return &remote{p: p, s: p.w.serverOf(kind, name), name: kind + ":" + name}, nil
}

// remote is a process's client of a server.
type remote struct {
	p    *proc
	s    *server
	name string
}

// call makes one request. An injected error (a dropped connection) may
// come before the request reached the server or after it took effect: the
// run chooses, so the caller cannot know, as over a real network.
func (r *remote) call(op string, apply func(now int64) (lease.Record, error)) (lease.Record, error) {
	p := r.p
	a, inj := p.enter(trace.OpRPC, 0)
	var rec lease.Record
	var err error
	if inj == 0 || p.w.choose.Choose(2) == 0 {
		if r.s.expire(p.w.now) {
			// The register changed at the expiry instant, before this
			// request: the trace says so, for the linearizability check.
			p.w.record(trace.Expiry(int16(p.idx), int16(a.id), r.s.rec, r.s.expires))
		}
		rec, err = apply(p.w.now)
	}
	if inj != 0 {
		rec, err = lease.Record{}, &fs.PathError{Op: op, Path: r.name, Err: inj}
	}
	res := "ok"
	switch {
	case err != nil:
		res = err.Error()
	case op != "release":
		res = fmt.Sprintf("{%d epoch %d version %d}", rec.Holder, rec.Epoch, rec.Version)
	}
	p.done(a, trace.Event{Op: trace.OpRPC, Path: p.w.tr.Str(r.name + " " + op), Data: p.w.tr.Str(res), Errno: errno(err)})
	return rec, err
}

// expire drops a record whose TTL ran out by now, and reports whether it
// did.
func (s *server) expire(now int64) bool {
	if s.present && now >= s.expires {
		s.present = false
		return true
	}
	return false
}

func (s *server) write(rec lease.Record, now int64, ttl time.Duration) lease.Record {
	s.counter++
	rec.Version, rec.TTL = s.counter, ttl // the record keeps the lease its writer held, as the real stores' values do
	s.rec, s.present, s.expires = rec, true, now+int64(ServerTTL(s.kind, ttl))
	return rec
}

func (r *remote) notFound() error {
	return &fs.PathError{Op: "read", Path: r.name, Err: syscall.ENOENT}
}

// Read implements lease.Store.
func (r *remote) Read() (lease.Record, error) {
	return r.call("read", func(int64) (lease.Record, error) {
		if !r.s.present {
			return lease.Record{}, r.notFound()
		}
		return r.s.rec, nil
	})
}

// Create implements lease.Store: insert if absent (SET NX, a transaction
// on the key's create revision, INSERT or UPDATE of a released or expired
// row). The epoch is the new version.
func (r *remote) Create(holder int64, ttl time.Duration) (lease.Record, error) {
	return r.call("create", func(now int64) (lease.Record, error) {
		if r.s.present {
			return lease.Record{}, &fs.PathError{Op: "create", Path: r.name, Err: syscall.EEXIST}
		}
		rec := r.s.write(lease.Record{Holder: holder}, now, ttl)
		rec.Epoch = rec.Version
		r.s.rec = rec
		return rec, nil
	})
}

// Renew implements lease.Store: compare-and-set on the version.
func (r *remote) Renew(cur lease.Record, ttl time.Duration) (lease.Record, error) {
	return r.call("renew", func(now int64) (lease.Record, error) {
		if !r.s.present || r.s.rec.Version != cur.Version {
			return lease.Record{}, lease.ErrConflict
		}
		return r.s.write(lease.Record{Holder: r.s.rec.Holder, Epoch: r.s.rec.Epoch}, now, ttl), nil
	})
}

// Takeover implements lease.Store: compare-and-set on the version, with a
// new epoch. A record the server has already expired is gone: a conflict,
// after which the caller reads nothing and creates.
func (r *remote) Takeover(stale lease.Record, holder int64, ttl time.Duration) (lease.Record, error) {
	return r.call("takeover", func(now int64) (lease.Record, error) {
		if !r.s.present || r.s.rec.Version != stale.Version {
			return lease.Record{}, lease.ErrConflict
		}
		rec := r.s.write(lease.Record{Holder: holder}, now, ttl)
		rec.Epoch = rec.Version
		r.s.rec = rec
		return rec, nil
	})
}

// Release implements lease.Store: compare-and-delete on the version. The
// counter goes on (Redis's counter key and etcd's revision outlive the
// record; the SQL row keeps its version), so no epoch is ever reused.
func (r *remote) Release(cur lease.Record) error {
	_, err := r.call("release", func(int64) (lease.Record, error) {
		if !r.s.present || r.s.rec.Version != cur.Version {
			return lease.Record{}, lease.ErrConflict
		}
		r.s.counter++
		r.s.present = false
		return lease.Record{}, nil
	})
	return err
}
