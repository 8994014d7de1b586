package etcdstore

import (
	"net"
	"net/url"
	"strings"
	"sync"
	"time"
)

// unreachable says why endpoints gave no answer, as far as a connection
// to each can tell (the client keeps its dial errors to itself, and a
// refused port read as a 5 s wait for "context deadline exceeded": a
// probe): the first endpoint's that fails, or that every one accepts
// connections (then it is not etcd, or not over the endpoint's scheme).
//
// The endpoints are tried at once, for half a second at most in all.
func unreachable(endpoints []string) string {
	errs := make([]error, len(endpoints))
	var wg sync.WaitGroup
	for i, ep := range endpoints {
		network, addr := "tcp", ep
		if u, err := url.Parse(ep); err == nil && u.Host != "" {
			addr = u.Host
			if u.Scheme == "unix" || u.Scheme == "unixs" {
				network, addr = "unix", u.Host+u.Path
			}
		} else if p, ok := strings.CutPrefix(ep, "unix://"); ok {
			network, addr = "unix", p
		}
		wg.Go(func() {
			c, err := net.DialTimeout(network, addr, 500*time.Millisecond)
			if err == nil {
				c.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err.Error()
		}
	}
	return "every endpoint accepts connections: is it etcd, and is it http or https, as the endpoint says?"
}
