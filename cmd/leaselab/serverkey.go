package main

import (
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// serverKey names the server and database a DSN points at however it is
// spelt, for the singleton mark: Redis's host:port and redis:// URL, with
// the default port and database filled in; etcd's endpoints in any order,
// with or without http://; a PostgreSQL URL or key=value string as pgx
// completes it (from the PG* variables and the service file too); a host
// as hostKey writes it. (A probe ran two runners
// on one Redis server as 127.0.0.1:16399 and redis://localhost:16399/0:
// their marks differed, and after a FLUSHALL a newcomer's command ran
// beside an orphan of the other's.) A DSN it cannot read is its own text.
func serverKey(store, dsn string) string {
	switch store {
	case "redis":
		addr, db := dsn, 0
		if strings.Contains(dsn, "://") {
			u, err := url.Parse(dsn)
			if err != nil {
				return dsn
			}
			addr = u.Host
			if d := strings.Trim(u.Path, "/"); d != "" {
				if db, err = strconv.Atoi(d); err != nil {
					return dsn
				}
			}
		}
		return "redis " + hostKey(addr, "6379") + "/" + strconv.Itoa(db)
	case "etcd":
		var eps []string
		for _, e := range strings.Split(dsn, ",") {
			scheme := "http"
			if s, rest, ok := strings.Cut(e, "://"); ok {
				scheme, e = strings.ToLower(s), rest
			}
			if strings.HasPrefix(scheme, "unix") {
				eps = append(eps, scheme+"://"+e) // a socket's path, as written
				continue
			}
			e, _, _ = strings.Cut(e, "/")
			eps = append(eps, scheme+"://"+hostKey(e, "2379"))
		}
		slices.Sort(eps)
		return "etcd " + strings.Join(slices.Compact(eps), ",")
	case "postgres":
		c, err := pgconn.ParseConfig(dsn)
		if err != nil {
			return dsn
		}
		hosts := []string{hostKey(net.JoinHostPort(c.Host, strconv.Itoa(int(c.Port))), "5432")}
		for _, f := range c.Fallbacks {
			hosts = append(hosts, hostKey(net.JoinHostPort(f.Host, strconv.Itoa(int(f.Port))), "5432"))
		}
		slices.Sort(hosts)
		return "postgres " + strings.Join(slices.Compact(hosts), ",") + "/" + c.Database + " user=" + c.User +
			" options=" + c.RuntimeParams["options"] + " search_path=" + c.RuntimeParams["search_path"]
	}
	return dsn
}

// hostKey is host:port with the port filled in and the host as written,
// lowercased, but for "localhost", which is 127.0.0.1, and an address,
// in its one form. A name is not resolved: a name a proxy routes by (one
// address for many databases) would give two leases one mark, and one
// whose addresses change on a failover, one lease two (a review).
func hostKey(hostport, defPort string) string {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = hostport, ""
	}
	if port == "" {
		port = defPort
	}
	host = strings.ToLower(strings.Trim(host, "[]"))
	switch ip := net.ParseIP(host); {
	case host == "" || host == "localhost":
		host = "127.0.0.1"
	case ip != nil:
		host = ip.String()
	}
	return net.JoinHostPort(host, port)
}
