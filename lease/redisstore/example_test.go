package redisstore_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/leaselab/leaselab/lease/redisstore"
)

// A lease on Redis: create, renew, release. (Compiled, not run: it needs a
// redis-server; TestContract runs the same calls against a real one.)
func Example() {
	s, err := redisstore.New(context.Background(), redisstore.Options{
		Addr:    "127.0.0.1:6379",
		Name:    "nightly-report",
		Timeout: 500 * time.Millisecond, // well under the renew interval
	})
	if err != nil {
		log.Fatal(err) // unreachable server, wrong password: here, not later
	}
	defer s.Close()
	rec, err := s.Create(int64(42), 9*time.Second)
	if err != nil {
		log.Fatal(err) // fs.ErrExist: someone else holds it
	}
	fmt.Println("leading with fencing epoch", rec.Epoch)
	if rec, err = s.Renew(rec, 9*time.Second); err != nil {
		log.Fatal(err) // lease.ErrConflict: taken over
	}
	if err := s.Release(rec); err != nil {
		log.Fatal(err)
	}
}
