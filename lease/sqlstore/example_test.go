package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/lease/sqlstore"
)

// A lease in an SQLite file, as two processes would use it.
func Example() {
	dir, err := os.MkdirTemp("", "sqlstore-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "leases.db")
	open := func() *sqlstore.Store {
		s, err := sqlstore.Open(context.Background(), sqlstore.SQLite, path, sqlstore.Options{Name: "nightly-report"})
		if err != nil {
			log.Fatal(err)
		}
		return s
	}
	a, b := open(), open()
	defer a.Close()
	defer b.Close()

	rec, _ := a.Create(1001, 9*time.Second)
	fmt.Printf("1001 leads: epoch %d, version %d\n", rec.Epoch, rec.Version)
	_, err = b.Create(1002, 9*time.Second)
	fmt.Println("1002 creates:", errors.Is(err, fs.ErrExist))
	rec, _ = a.Renew(rec, 9*time.Second)
	fmt.Printf("1001 renews: epoch %d, version %d\n", rec.Epoch, rec.Version)
	seen, _ := b.Read()
	_ = a.Release(rec)
	_, err = b.Takeover(seen, 1002, 9*time.Second)
	fmt.Println("1002 takes over a released lease:", errors.Is(err, lease.ErrConflict))
	rec, _ = b.Create(1002, 9*time.Second)
	fmt.Printf("1002 leads: epoch %d, version %d\n", rec.Epoch, rec.Version)
	// Output:
	// 1001 leads: epoch 1, version 1
	// 1002 creates: true
	// 1001 renews: epoch 1, version 2
	// 1002 takes over a released lease: true
	// 1002 leads: epoch 4, version 4
}
