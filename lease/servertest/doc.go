// Package servertest starts real database servers for tests: a
// redis-server, an etcd and a PostgreSQL cluster, each in a temporary
// directory, listening on a free loopback port, and stopped (SIGKILL of
// every one of its processes) when the test ends.
//
// A test never passes silently without its server. When a server's binary
// is missing, the test is skipped with a message that says which Debian
// package to install, unless the environment variable CI is set (.ci/run
// exports CI=1): there a missing server fails the test.
//
//   - [Redis] runs redis-server --port N --bind 127.0.0.1 --appendonly no
//     and an empty --save (no persistence), with --requirepass when a
//     password is given.
//   - [Etcd] runs a one-member etcd with its data directory in memory
//     ([MemDir]: etcd 3.4 has no switch to leave out its fsyncs, as
//     PostgreSQL runs here with fsync=off), client and peer URLs on
//     loopback, and a 10 ms heartbeat and 100 ms election timeout (so
//     that it elects itself at once and its shortest lease is one second).
//     [EtcdCluster] starts several members, each in memory too.
//   - [Postgres] runs postgres on a copy of a cluster that initdb made once
//     per test binary (initdb takes about 2 s, a copy and a start about
//     0.4 s), with password (SCRAM) authentication on TCP. PostgreSQL
//     refuses to run as root: when the tests run as root, initdb and
//     postgres run as the unprivileged user nobody (the child process's
//     credentials are set by the Go runtime, as setpriv would), in
//     directories created for it under the system's temporary directory
//     and removed afterwards.
//
// [Server.Kill], [Server.Pause] and [Server.Resume] send SIGKILL, SIGSTOP
// and SIGCONT to a running server, for the tests of what a client does
// when its server dies or hangs mid-lease. They reach the server's process
// group and every descendant found in /proc (PostgreSQL's children leave
// the group with setsid), and Kill and Pause return only once every
// process has exited or stopped.
package servertest
