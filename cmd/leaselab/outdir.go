package main

import (
	"flag"
	"os"
	"path/filepath"
)

// outDir is where a command writes the files it makes on the side
// (porcupine's pages, decision files): -out-dir if given, else a directory
// of its own made on first use, so that two runs, or two users, never
// overwrite each other's files. Every path it hands out is printed by the
// command that writes it.
type outDir struct {
	dir     string // -out-dir; "" until made when not given
	pattern string // os.MkdirTemp's pattern for the fresh directory
}

func (d *outDir) register(fs *flag.FlagSet, what string) {
	d.pattern = "leaselab-" + fs.Name() + "-"
	fs.StringVar(&d.dir, "out-dir", "", "write "+what+" into `DIR` (default: a new directory under $TMPDIR, made only when something is written)")
}

// path returns where to write the file called name, making the directory
// if it does not exist yet.
func (d *outDir) path(name string) (string, error) {
	if d.dir == "" {
		dir, err := os.MkdirTemp("", d.pattern)
		if err != nil {
			return "", err
		}
		d.dir = dir
	} else if err := os.MkdirAll(d.dir, 0o755); err != nil {
		return "", err
	}
	return filepath.Join(d.dir, name), nil
}
