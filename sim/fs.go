package sim

import (
	"bytes"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

// firstFD is where descriptor numbers start, as in a process whose standard
// input, output and error are open.
const firstFD = 3

const (
	accMode = lease.O_RDONLY | lease.O_WRONLY | lease.O_RDWR
	// modelled are the open flags the simulator implements. Any other flag
	// fails with EINVAL, so that code relying on semantics the model lacks
	// (O_DIRECTORY, O_SYNC, ...) fails loudly instead of diverging from
	// Linux silently. O_CLOEXEC is accepted and has nothing to do: there is
	// no exec. O_NOFOLLOW is accepted and has nothing to do either: the
	// model has no symbolic links, so no last component is ever one.
	modelled = accMode | lease.O_CREATE | lease.O_EXCL | lease.O_TRUNC |
		os.O_APPEND | syscall.O_CLOEXEC | lease.O_NOFOLLOW
)

// An inode is a file or directory apart from its names: unlink removes a
// name, and open descriptions keep the inode, and so its data, alive.
type inode struct {
	data []byte
	// lent reports whether ReadFile returned data itself: the next change
	// must copy it first (see own).
	lent bool
	mode fs.FileMode
	// synced is the data as the disk has it, when dirty: written since
	// its last fsync (tracked only when the file system models power loss).
	synced []byte
	dirty  bool
	// locked reports whether an open file description holds the inode's
	// flock(2) lock; the description knows it is the one (its own locked).
	locked bool
	// id numbers the inode in the order its file system made them: what
	// the partial-order reduction knows it by, the same in every run that
	// made the same files in the same order (a pointer is not).
	id int
}

// A description is an open file description. Without dup or fork each
// belongs to exactly one descriptor, so it lives by value in the FDTable and
// opening a file allocates nothing.
type description struct {
	ino   *inode // nil marks a free descriptor
	off   int
	write bool
	// noRW: opened with access mode 3 (O_WRONLY|O_RDWR), Linux's mode
	// for neither reading nor writing, which flock refuses (EBADF).
	noRW   bool
	append bool
	locked bool // it holds its inode's flock lock
}

// FileSystem is an in-memory file system with the semantics of Linux at the
// granularity of system calls: each operation is one atomic step, with the
// error values the kernel gives. It has no goroutines, clock or randomness,
// so a run of the simulator is reproducible.
//
// Names are resolved as the kernel walks them (fspath.go): relative names
// are taken relative to "/", "." stays and ".." goes up, every component
// before the last must be a directory (so "f/.." is ENOTDIR when f is a
// file), and a trailing slash asks for a directory. There are no symbolic
// links, permissions, umask, timestamps or size limits (a directory's size
// is 0), but the disk can be full or failing for a while (full).
type FileSystem struct {
	// names maps absolute clean paths to inodes, directories included.
	// Every entry's parent is a directory entry, so a lookup that finds a
	// name needs no walk of its ancestors.
	names nameTable
	// inodes counts the inodes made (newInode).
	inodes int
	// Durability, tracked when the run can lose power (TrackDurability):
	// durable is the namespace as the disk has it, at the last metadata
	// commit (an fsync of a directory); journal holds the namespace
	// changes since, in order. A power loss keeps the durable namespace
	// and a prefix of the journal, as an ordered metadata journal does.
	tracking bool
	durable  map[string]*inode
	journal  []nsChange
	// unlocked, if set, is told of every release of a flock lock (by
	// LOCK_UN, by the close of the locking descriptor, or by the death of
	// its process), so that the world can wake the processes waiting for
	// it.
	unlocked func(*inode)
	// full holds the errors that a full disk (ENOSPC) or a failing one
	// (EIO) gives the calls that need a new block, inode or name: a write
	// of at least one byte, an open that creates a file, a link. Each
	// fails without effect, after the checks that come first on Linux
	// (EBADF, EEXIST, ENOENT). The world sets them for the length of a
	// DiskFull or DiskEIO stretch (setDisk).
	full diskErrs
	// watch, when set (WatchDir), is a directory whose names are counted
	// as they come and go: watchN of them now.
	watch  string
	watchN int
	// cleaned is the last name clean found clean: most calls name the
	// lock file, and a string compared with itself costs a pointer compare.
	cleaned string
	// chunks are memory for files' bytes (newData): chunks[ci] is used up
	// to used, the ones before it whole. A spare world's file system keeps
	// them for the next run (reclaim): a rewrite of the lease file after a
	// read lent its bytes (ReadFile) was an allocation, a quarter of a
	// short run's.
	chunks   [][]byte
	ci, used int
}

// dataChunk is the size of a file system's chunk of file bytes.
const dataChunk = 4096

// newData returns n bytes of memory for a file's data, their capacity n:
// carved from a chunk (the next when this one has not n bytes left), or
// their own when n is a large part of a chunk. Its bytes may be a
// previous run's: Write, its one caller, writes every one it uses.
func (f *FileSystem) newData(n int) []byte {
	if n > dataChunk/4 {
		return make([]byte, n)
	}
	for f.ci >= len(f.chunks) || f.used+n > dataChunk {
		if f.ci < len(f.chunks) {
			f.ci, f.used = f.ci+1, 0 // this one is full: the next
			continue
		}
		f.chunks = append(f.chunks, make([]byte, dataChunk))
	}
	b := f.chunks[f.ci][f.used : f.used+n : f.used+n]
	f.used += n
	return b
}

// diskErrs are the errors of a full or failing disk (FileSystem.full), by
// the kind of call; zero: the call succeeds.
type diskErrs struct {
	create syscall.Errno // an open that creates a file: a new inode
	write  syscall.Errno // a write of at least one byte: new blocks
	link   syscall.Errno // a new name for a file that has one
}

// NewFileSystem returns a file system holding only the directory "/".
func NewFileSystem() *FileSystem {
	return &FileSystem{names: nameTable{m: map[string]*inode{"/": {mode: rootMode, id: 1}}}, inodes: 1}
}

// rootMode is the mode of the root directory, inode 1.
const rootMode = fs.ModeDir | 0o755

// newInode returns a new inode of mode, numbered after the last.
func (f *FileSystem) newInode(mode fs.FileMode) *inode {
	f.inodes++
	return &inode{mode: mode, id: f.inodes}
}

// MkdirAll creates dir and its missing ancestors, for setting up a world
// before a run; dir must be absolute and clean. It panics if a component
// exists and is not a directory, which is a mistake in the setup.
func (f *FileSystem) MkdirAll(dir string) {
	if !isClean(dir) {
		panic("sim: MkdirAll needs an absolute, clean path: " + strconv.Quote(dir))
	}
	for i := 1; i <= len(dir); i++ {
		if i < len(dir) && dir[i] != '/' {
			continue
		}
		switch ino := f.names.get(dir[:i]); {
		case ino == nil:
			f.names.set(dir[:i], f.newInode(fs.ModeDir|0o755))
			f.counted(dir[:i], 1)
		case !ino.mode.IsDir():
			panic("sim: MkdirAll: not a directory: " + dir[:i])
		}
	}
}

// Place makes name a regular file holding a copy of data with permission
// perm, for setting up a world before a run (an empty lock file, a stale
// lease). An existing file keeps its identity, so links to it see the new
// content. Errors are *fs.PathError with Op "place".
func (f *FileSystem) Place(name string, data []byte, perm fs.FileMode) error {
	p, k, errno := f.clean(name)
	if errno == 0 && k == lastLong {
		errno = syscall.ENAMETOOLONG
	}
	if errno != 0 {
		return pathErr("place", name, errno)
	}
	ino := f.names.get(p)
	switch {
	case ino == nil:
		if errno := f.parentErr(p); errno != 0 {
			return pathErr("place", name, errno)
		}
		ino = f.newInode(0)
		f.names.set(p, ino)
		f.counted(p, 1)
	case ino.mode.IsDir():
		return pathErr("place", name, syscall.EISDIR)
	}
	ino.data = bytes.Clone(data)
	ino.mode = perm.Perm()
	return nil
}

// WatchDir starts counting the names directly in directory dir (WatchCount):
// the checker's bounded-files property reads the count after every step.
func (f *FileSystem) WatchDir(dir string) {
	f.watch = dir
	f.recount()
}

// WatchCount is the number of names now in the directory WatchDir named.
func (f *FileSystem) WatchCount() int { return f.watchN }

// recount counts the watched directory's names afresh.
func (f *FileSystem) recount() {
	f.watchN = 0
	if f.watch == "" {
		return
	}
	for name := range f.names.m {
		if name != "/" && parentOf(name) == f.watch {
			f.watchN++
		}
	}
}

// counted adjusts the watched count by d for a name added (1) or removed
// (-1) at the clean path p.
func (f *FileSystem) counted(p string, d int) {
	if f.watch != "" && parentOf(p) == f.watch {
		f.watchN += d
	}
}

// parentOf is the directory holding the clean path p (not "/").
func parentOf(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i == 0 {
		return "/"
	}
	return p[:i]
}

// ReadDir lists the names directly in dir, sorted, as one step.
func (f *FileSystem) ReadDir(dir string) ([]string, error) {
	p, ino, err := f.lookup("readdir", dir)
	if err != nil {
		return nil, err
	}
	if !ino.mode.IsDir() {
		return nil, pathErr("readdir", dir, syscall.ENOTDIR)
	}
	var out []string
	for name := range f.names.m {
		if name != "/" && name != p && parentOf(name) == p {
			out = append(out, name[len(p)+min(1, len(p)-1):])
		}
	}
	slices.Sort(out)
	return out, nil
}

// Open is open(2) by the process owning t. Besides the flags of package
// lease it models O_APPEND and accepts O_CLOEXEC; others fail with EINVAL.
func (f *FileSystem) Open(t *FDTable, name string, flag int, perm fs.FileMode) (lease.FD, error) {
	if flag&^modelled != 0 {
		return -1, pathErr("open", name, syscall.EINVAL)
	}
	p, k, errno := f.clean(name)
	if errno != 0 {
		return -1, pathErr("open", name, errno)
	}
	write := flag&accMode == lease.O_WRONLY || flag&accMode == lease.O_RDWR
	// Access mode 3 reads and writes nothing, but open checks it as a
	// write: a directory is EISDIR.
	noRW := flag&accMode == accMode
	if k == lastLong {
		return -1, pathErr("open", name, syscall.ENAMETOOLONG)
	}
	ino := f.names.get(p)
	if k == lastSlash {
		if errno := f.openSlash(p, ino, flag); errno != 0 {
			return -1, pathErr("open", name, errno)
		}
	}
	switch {
	case ino == nil:
		if errno := f.parentErr(p); errno != 0 {
			return -1, pathErr("open", name, errno)
		}
		if flag&lease.O_CREATE == 0 {
			return -1, pathErr("open", name, syscall.ENOENT)
		}
		if f.full.create != 0 {
			return -1, pathErr("open", name, f.full.create)
		}
		ino = f.newInode(perm.Perm())
		f.names.set(p, ino)
		f.counted(p, 1)
		f.logSet(p, ino)
	case flag&(lease.O_CREATE|lease.O_EXCL) == lease.O_CREATE|lease.O_EXCL:
		return -1, pathErr("open", name, syscall.EEXIST)
	case ino.mode.IsDir():
		if write || noRW || flag&(lease.O_CREATE|lease.O_TRUNC) != 0 {
			return -1, pathErr("open", name, syscall.EISDIR)
		}
	case flag&lease.O_TRUNC != 0:
		// Linux truncates even with O_RDONLY. The capacity is kept so that
		// rewriting a lease file does not allocate.
		f.dirty(ino)
		if ino.lent {
			ino.data, ino.lent = nil, false // the reader keeps the old bytes
		} else {
			ino.data = ino.data[:0]
		}
	}
	return t.alloc(description{ino: ino, write: write, noRW: noRW, append: flag&os.O_APPEND != 0}), nil
}

// Write is write(2): it writes all of b at the description's offset,
// extending the file as needed, and advances the offset.
func (f *FileSystem) Write(t *FDTable, fd lease.FD, b []byte) (int, error) {
	d := t.get(fd)
	if d == nil || !d.write {
		return 0, fdErr("write", fd, syscall.EBADF)
	}
	if len(b) == 0 {
		return 0, nil
	}
	if f.full.write != 0 {
		return 0, fdErr("write", fd, f.full.write)
	}
	ino := d.ino
	f.dirty(ino)
	if ino.lent {
		ino.data, ino.lent = bytes.Clone(ino.data), false
	}
	if d.append {
		d.off = len(ino.data)
	}
	end := d.off + len(b)
	if n := len(ino.data); end > n {
		if end > cap(ino.data) {
			// As append grows a slice (at least double), so that a file
			// written a piece at a time does not copy itself each time.
			nd := f.newData(max(end, 2*cap(ino.data)))
			copy(nd, ino.data)
			ino.data = nd
		}
		ino.data = ino.data[:end]
		// The offset is past the end when another descriptor truncated the
		// file. The gap is a hole that reads as zeros; the bytes under it
		// may be stale ones from before the truncation.
		if d.off > n {
			clear(ino.data[n:d.off])
		}
	}
	copy(ino.data[d.off:], b)
	d.off = end
	return len(b), nil
}

// Fsync is fsync(2). Of a file, it makes the file's data durable; of a
// directory, every namespace change so far (this model's disk commits its
// metadata journal in order, as ext4 does). Only a power loss (PowerLoss)
// can tell.
func (f *FileSystem) Fsync(t *FDTable, fd lease.FD) error {
	d := t.get(fd)
	if d == nil {
		return fdErr("fsync", fd, syscall.EBADF)
	}
	if f.tracking {
		if d.ino.mode.IsDir() {
			f.commit()
		} else {
			d.ino.dirty, d.ino.synced = false, nil
		}
	}
	return nil
}

// Close is close(2).
func (f *FileSystem) Close(t *FDTable, fd lease.FD) error {
	d := t.get(fd)
	if d == nil {
		return fdErr("close", fd, syscall.EBADF)
	}
	if d.locked {
		t.unlock(fd)
	}
	t.fds[fd] = description{}
	return nil
}

// ReadFile returns the content of the named file, as one step: a snapshot
// that later writes do not change, and that the caller must not modify.
func (f *FileSystem) ReadFile(name string) ([]byte, error) {
	_, ino, err := f.lookup("read", name)
	if err != nil {
		return nil, err
	}
	if ino.mode.IsDir() {
		return nil, pathErr("read", name, syscall.EISDIR)
	}
	if len(ino.data) > lease.MaxReadFile {
		return nil, pathErr("read", name, syscall.EFBIG)
	}
	if ino.data == nil {
		return []byte{}, nil // never nil, like os.ReadFile
	}
	// The file's own bytes, not a copy: a run reads lease files far more
	// often than it writes them, and the next write copies them first
	// (lent), so what the caller holds never changes. The caller must not
	// modify it (the lease code only parses it).
	ino.lent = true
	return ino.data[:len(ino.data):len(ino.data)], nil
}

// Stat is lstat(2) (there are no symbolic links here). The result is a snapshot; it does not follow later
// writes.
func (f *FileSystem) Stat(name string) (fs.FileInfo, error) {
	_, ino, err := f.lookup("stat", name)
	if err != nil {
		return nil, err
	}
	return fileInfo{name: baseName(name), size: int64(len(ino.data)), mode: ino.mode}, nil
}

// Remove is unlink(2). Descriptors open on the file keep working on the
// now nameless inode.
func (f *FileSystem) Remove(name string) error {
	p, ino, err := f.lookup("remove", name)
	if err != nil {
		return err
	}
	if ino.mode.IsDir() {
		return pathErr("remove", name, syscall.EISDIR)
	}
	f.names.del(p)
	f.counted(p, -1)
	f.logDelete(p)
	return nil
}

// Rename is rename(2): newname comes to refer to what oldname referred to,
// atomically replacing a file or an empty directory of the same kind there,
// and oldname disappears. The checks and their order follow Linux.
func (f *FileSystem) Rename(oldname, newname string) error {
	op, ko, oerr := f.clean(oldname)
	np, nk, nerr := f.clean(newname)
	errno := f.walkErr(op, oerr)
	if errno == 0 {
		errno = f.walkErr(np, nerr)
	}
	if errno == 0 && (ko == lastDots || nk == lastDots) {
		errno = syscall.EBUSY // "/", "d/." or "d/..": no name to move
	}
	if errno != 0 {
		return linkErr("rename", oldname, newname, errno)
	}
	src, dst := f.names.get(op), f.names.get(np)
	switch {
	case ko == lastLong:
		errno = syscall.ENAMETOOLONG // the lookup of the name
	case src == nil:
		errno = syscall.ENOENT
	case nk == lastLong:
		errno = syscall.ENAMETOOLONG
	case !src.mode.IsDir() && (ko == lastSlash || nk == lastSlash):
		errno = syscall.ENOTDIR
	case isUnder(np, op):
		errno = syscall.EINVAL
	case isUnder(op, np):
		errno = syscall.ENOTEMPTY
	case src == dst:
		// The same name, or two links to one file: POSIX says rename does
		// nothing, and both names stay.
		return nil
	case dst == nil:
		// A fresh name: nothing is replaced.
	case src.mode.IsDir() && !dst.mode.IsDir():
		errno = syscall.ENOTDIR
	case !src.mode.IsDir() && dst.mode.IsDir():
		errno = syscall.EISDIR
	case dst.mode.IsDir() && f.hasChildren(np):
		errno = syscall.ENOTEMPTY
	}
	if errno != 0 {
		return linkErr("rename", oldname, newname, errno)
	}
	if dst == nil {
		f.counted(np, 1)
	}
	f.counted(op, -1)
	if src.mode.IsDir() {
		f.moveChildren(op, np)
		if f.tracking {
			f.journal = append(f.journal, nsChange{set: np, del: op, ino: src, dir: true})
		}
	}
	f.names.set(np, src)
	f.names.del(op)
	if src.mode.IsDir() {
		f.recount() // the watched directory may have moved
	}
	if !src.mode.IsDir() && f.tracking {
		f.journal = append(f.journal, nsChange{set: np, del: op, ino: src})
	}
	return nil
}

// Link is link(2): newname becomes a second name of the file oldname.
func (f *FileSystem) Link(oldname, newname string) error {
	op, ko, oerr := f.clean(oldname)
	np, nk, nerr := f.clean(newname)
	var src *inode
	if oerr == 0 {
		src = f.names.get(op)
	}
	errno := syscall.Errno(0)
	switch {
	case oerr == 0 && ko == lastLong:
		errno = syscall.ENAMETOOLONG
	case src == nil:
		if errno = f.walkErr(op, oerr); errno == 0 {
			errno = syscall.ENOENT
		}
	case ko == lastSlash && !src.mode.IsDir():
		errno = syscall.ENOTDIR
	case nerr != 0:
		errno = nerr
	case nk == lastLong:
		errno = syscall.ENAMETOOLONG
	case f.names.get(np) != nil:
		errno = syscall.EEXIST
	default:
		errno = f.parentErr(np)
		if errno == 0 && nk == lastSlash {
			errno = syscall.ENOENT // a new name with a slash asks for a directory
		}
		if errno == 0 && src.mode.IsDir() {
			errno = syscall.EPERM
		}
		if errno == 0 {
			errno = f.full.link
		}
	}
	if errno != 0 {
		return linkErr("link", oldname, newname, errno)
	}
	f.names.set(np, src)
	f.counted(np, 1)
	f.logSet(np, src)
	return nil
}

// Files lists every name, directories included, sorted by name so that the
// state of the world prints the same way on every run. Files that were
// removed while open are not listed: they have no name.
func (f *FileSystem) Files() []trace.File {
	out := make([]trace.File, 0, len(f.names.m))
	for name, ino := range f.names.m {
		out = append(out, trace.File{Name: name, Data: bytes.Clone(ino.data), Dir: ino.mode.IsDir()})
	}
	slices.SortFunc(out, func(a, b trace.File) int { return strings.Compare(a.Name, b.Name) })
	return out
}
