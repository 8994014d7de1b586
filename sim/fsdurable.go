package sim

import (
	"bytes"
	"maps"
	"slices"
)

// nsChange is one namespace change in the metadata journal: set names
// ino, del removes a name; a rename does both at once (and, for a
// directory, moves its children).
type nsChange struct {
	set, del string
	ino      *inode
	dir      bool
}

func (f *FileSystem) logSet(name string, ino *inode) {
	if f.tracking {
		f.journal = append(f.journal, nsChange{set: name, ino: ino})
	}
}

func (f *FileSystem) logDelete(name string) {
	if f.tracking {
		f.journal = append(f.journal, nsChange{del: name})
	}
}

// dirty notes that ino's data is about to change, keeping what the disk
// has until an fsync.
func (f *FileSystem) dirty(ino *inode) {
	if f.tracking && !ino.dirty {
		ino.synced, ino.dirty = bytes.Clone(ino.data), true
		if ino.synced == nil {
			ino.synced = []byte{}
		}
	}
}

// commit makes every namespace change so far durable.
func (f *FileSystem) commit() {
	f.durable = maps.Clone(f.names.m)
	f.journal = f.journal[:0]
}

// TrackDurability starts modelling what a power loss keeps: from now on,
// data is durable once fsynced and names once their directory is fsynced.
// Everything that exists when it is called is durable.
func (f *FileSystem) TrackDurability() {
	f.tracking = true
	f.commit()
	for _, ino := range f.names.m {
		ino.dirty, ino.synced = false, nil
	}
}

// Torn data outcomes of a power loss, for a file written since its last
// fsync.
const (
	TornOld    = iota // the write never reached the disk: the synced data
	TornNew           // it all did
	TornPrefix        // the new data, cut short
	TornZeros         // the new size, filled with zeros (metadata without its data blocks)
	numTorn
)

// PowerLoss is the machine losing power: what survives is the durable
// namespace plus a prefix of the metadata journal (its length chosen by
// choose), and for each file written since its last fsync, one of the
// Torn outcomes (chosen by choose). Descriptors are not touched: the
// processes holding them are dead, and the caller closes their tables.
// Afterwards everything is durable again. Without TrackDurability it does
// nothing.
func (f *FileSystem) PowerLoss(choose func(n int) int) {
	if !f.tracking {
		return
	}
	names := maps.Clone(f.durable)
	for _, c := range f.journal[:choose(len(f.journal)+1)] {
		if c.dir {
			moveIn(names, c.del, c.set)
		}
		if c.del != "" {
			delete(names, c.del)
		}
		if c.set != "" {
			names[c.set] = c.ino
		}
	}
	// Visit inodes in name order, so the choices are made in a fixed order.
	keys := slices.Sorted(maps.Keys(names))
	seen := map[*inode]bool{}
	for _, k := range keys {
		ino := names[k]
		if seen[ino] || !ino.dirty {
			continue
		}
		seen[ino] = true
		switch choose(numTorn) {
		case TornOld:
			ino.data = ino.synced
		case TornPrefix:
			ino.data = ino.data[:choose(len(ino.data)+1)]
		case TornZeros:
			ino.data = make([]byte, len(ino.data))
		}
	}
	for _, ino := range names {
		ino.dirty, ino.synced, ino.locked = false, nil, false
	}
	f.names = nameTable{m: names}
	f.recount()
	f.commit()
}

// moveIn moves the children of directory from to under to, in a
// namespace map.
func moveIn(names map[string]*inode, from, to string) {
	for _, k := range slices.Sorted(maps.Keys(names)) {
		if isUnder(k, from) && k != from {
			names[to+k[len(from):]] = names[k]
			delete(names, k)
		}
	}
}
