module github.com/leaselab/leaselab

go 1.26.0

require pgregory.net/rapid v1.3.0

// porcupine: the linearizability checker and its HTML view (model).
require github.com/anishathalye/porcupine v1.3.1

// progressbar draws leaselab's progress bars (check, explore, torture) and
// x/term tells whether standard error is a terminal; both well kept, and
// neither hand-rolled terminal code.
require (
	github.com/schollz/progressbar/v3 v3.19.1
	golang.org/x/term v0.47.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/coreos/go-semver v0.3.1 // indirect
	github.com/coreos/go-systemd/v22 v22.7.0 // indirect
	github.com/dustin/go-humanize v1.1.0 // indirect
	github.com/golang/protobuf v1.5.4 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/grpc-ecosystem/grpc-gateway/v2 v2.29.0 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	github.com/mattn/go-isatty v0.0.24 // indirect
	github.com/mitchellh/colorstring v0.0.0-20190213212951-d06e56a500db // indirect
	github.com/ncruces/go-strftime v1.1.0 // indirect
	github.com/remyoudompheng/bigfft v0.0.0-20230129092748-24d4a6f8daec // indirect
	github.com/rivo/uniseg v0.4.7 // indirect
	go.etcd.io/etcd/client/pkg/v3 v3.7.3 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	go.uber.org/multierr v1.11.0 // indirect
	golang.org/x/net v0.61.0 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	google.golang.org/genproto/googleapis/api v0.0.0-20260803160001-6ac0973c030d // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260803160001-6ac0973c030d // indirect
	google.golang.org/protobuf v1.36.11 // indirect
	modernc.org/libc v1.80.1 // indirect
	modernc.org/mathutil v1.7.1 // indirect
	modernc.org/memory v1.12.1 // indirect
)

// golang.org/x/sys/unix: flock(2) for lease.OSFS.Flock (the flock store),
// the LOCK_* values lease exports, CLOCK_MONOTONIC for the torture
// harness's histories and access(2) for leaselab run's checks; package
// syscall is frozen, and x/sys/unix is the maintained home of these calls.
require golang.org/x/sys v0.50.0

// The distributed stores (issue 7), each a lease.Store in its own package
// so that package lease itself depends on none of them:
//   - github.com/redis/go-redis/v9: lease/redisstore's client (server-side
//     Lua scripts for compare-and-set, SET NX PX for create).
//   - go.etcd.io/etcd/client/v3: lease/etcdstore's client (leases for the
//     TTL, transactions comparing a key's revision), and its api/v3 for
//     the client's error values (rpctypes: a spare lease gone).
//   - go.uber.org/zap: the etcd client's logger type; etcdstore gives it a
//     no-op logger (errors are returned, not logged).
//   - modernc.org/sqlite: lease/sqlstore's embedded default, SQLite in pure
//     Go (no cgo).
//   - github.com/jackc/pgx/v5: lease/sqlstore's PostgreSQL driver (its
//     database/sql adapter, pgx/v5/stdlib).
//   - google.golang.org/grpc: the etcd client's transport, for its
//     reconnection back-off (lease/etcdstore: gRPC's default waits up to
//     120 s between attempts).
require (
	github.com/jackc/pgx/v5 v5.12.0
	github.com/redis/go-redis/v9 v9.23.0
	go.etcd.io/etcd/api/v3 v3.7.3
	go.etcd.io/etcd/client/v3 v3.7.3
	go.uber.org/zap v1.27.1
	google.golang.org/grpc v1.83.2
	modernc.org/sqlite v1.62.0
)
