package sim

// nameTable is a file system's namespace: absolute clean paths to inodes,
// directories included, with the last name found remembered. Most calls
// name the lease file, and clean gives back the very string it found clean
// last (FileSystem.cleaned), so that a repeat compares two equal pointers
// where the map's lookup compared the name with each of its keys (1.9% of
// BenchmarkSimSyscall's instructions). Every change goes through set, del
// or a new table, which forget the name.
type nameTable struct {
	m       map[string]*inode
	last    string // the last name get found, and its inode
	lastIno *inode // (nil: none)
}

// get returns the inode that p names, or nil.
func (t *nameTable) get(p string) *inode {
	if t.lastIno != nil && p == t.last {
		return t.lastIno
	}
	ino := t.m[p]
	if ino != nil {
		t.last, t.lastIno = p, ino
	}
	return ino
}

// set makes p name ino.
func (t *nameTable) set(p string, ino *inode) {
	t.lastIno = nil
	t.m[p] = ino
}

// del removes the name p.
func (t *nameTable) del(p string) {
	t.lastIno = nil
	delete(t.m, p)
}
