package etcdstore_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/leaselab/leaselab/lease/etcdstore"
)

// A lease on etcd: create, renew, release. (Compiled, not run: it needs an
// etcd; TestContract runs the same calls against a real one.)
func Example() {
	s, err := etcdstore.New(context.Background(), etcdstore.Options{
		Endpoints: []string{"http://127.0.0.1:2379"},
		Name:      "nightly-report",
		Timeout:   500 * time.Millisecond, // well under the renew interval
	})
	if err != nil {
		log.Fatal(err) // unreachable cluster, wrong password: here, not later
	}
	defer s.Close()
	rec, err := s.Create(int64(42), 9*time.Second) // an etcd lease of 9 s
	if err != nil {
		log.Fatal(err) // fs.ErrExist: someone else holds it
	}
	fmt.Println("leading with fencing epoch", rec.Epoch) // a cluster revision
	if rec, err = s.Renew(rec, 9*time.Second); err != nil {
		log.Fatal(err) // lease.ErrConflict: taken over
	}
	if err := s.Release(rec); err != nil {
		log.Fatal(err)
	}
}
