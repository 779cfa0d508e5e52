//go:build unix

package safefile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/ticketbridge/ticketbridge/internal/atomicfile"
	"golang.org/x/sys/unix"
)

// Dir is an open folder whose path held no link that someone other than
// root or this process's user could have planted (see [OpenDir]). What is
// done through it is done relative to the open folder, by descriptor, so a
// folder renamed or swapped for a link after the opening changes nothing:
// the work happens where the folder was when it was opened, never where a
// link points. Every call holds the open file while it runs, so a Close
// from another goroutine cannot let a call reach a descriptor reused since.
type Dir struct {
	f    *os.File
	path string // as opened: for messages only
}

// maxLinks bounds the links followed while opening one path, as the
// kernel's own resolution does (it refuses after 40).
const maxLinks = 40

// dirFlags open a folder, never through a link at the last element.
const dirFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC

// OpenDir opens the folder at path. A symbolic link among its elements is
// followed only where it lies in a folder that only root or this process's
// user can write: owned by one of them, with no write bit for the group or
// others (or, with the sticky bit, a link owned by one of them). Anywhere
// else, as in the 2770 folders the staff's group shares with the service, a
// link could have been planted by someone with fewer rights, and OpenDir
// fails with an error wrapping [ErrLink]. The path is walked element by
// element by descriptor: each element is looked up in the folder the walk
// holds, so a folder swapped for a link during the walk is seen as the link
// it has become, and judged.
func OpenDir(path string) (*Dir, error) {
	abs := path
	if !filepath.IsAbs(path) {
		// Not filepath.Abs: it would clean a ".." after a link lexically.
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		abs = wd + "/" + path
	}
	fd, err := walkTrusted(abs)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return newDir(fd, path), nil
}

// walkTrusted opens the folder abs names from the root, following a link
// only where [OpenDir] allows it, and returns its descriptor.
func walkTrusted(abs string) (int, error) {
	euid := uint32(os.Geteuid())
	fd, err := unix.Open("/", dirFlags, 0)
	if err != nil {
		return -1, err
	}
	links := 0
	at := "/" // where the walk is, for messages
	rest := strings.Split(abs, "/")
	for len(rest) > 0 {
		if walkStep != nil {
			walkStep(at)
		}
		e := rest[0]
		rest = rest[1:]
		if e == "" || e == "." {
			continue
		}
		var st unix.Stat_t
		if err := unix.Fstatat(fd, e, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			unix.Close(fd)
			return -1, fmt.Errorf("%s: %w", filepath.Join(at, e), err)
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			var parent unix.Stat_t
			if err := unix.Fstat(fd, &parent); err != nil {
				unix.Close(fd)
				return -1, err
			}
			if !trustedLink(parent, st, euid) {
				unix.Close(fd)
				return -1, fmt.Errorf("%s: %w", filepath.Join(at, e), ErrLink)
			}
			if links++; links > maxLinks {
				unix.Close(fd)
				return -1, fmt.Errorf("%s: %w", filepath.Join(at, e), unix.ELOOP)
			}
			target, err := readlinkat(fd, e)
			if err != nil {
				unix.Close(fd)
				return -1, fmt.Errorf("%s: %w", filepath.Join(at, e), err)
			}
			if strings.HasPrefix(target, "/") {
				unix.Close(fd)
				if fd, err = unix.Open("/", dirFlags, 0); err != nil {
					return -1, err
				}
				at = "/"
			}
			rest = append(strings.Split(target, "/"), rest...)
			continue
		}
		// A folder, or ".." (the parent of the folder held, as the
		// kernel resolves it): opened where it was looked up, so that a
		// link swapped in since fails the open rather than being followed.
		next, err := unix.Openat(fd, e, dirFlags, 0)
		if err != nil {
			err = fmt.Errorf("%s: %w", filepath.Join(at, e), dirErr(fd, e, err))
			unix.Close(fd)
			return -1, err
		}
		unix.Close(fd)
		fd = next
		at = filepath.Join(at, e)
	}
	return fd, nil
}

// readlinkat reads the link name in the folder dirFD.
func readlinkat(dirFD int, name string) (string, error) {
	for n := 256; ; n *= 2 {
		buf := make([]byte, n)
		m, err := unix.Readlinkat(dirFD, name, buf)
		if err != nil {
			return "", err
		}
		if m < n {
			return string(buf[:m]), nil
		}
	}
}

// walkStep, when a test sets it, runs before each element of OpenDir's
// walk, with where the walk is: the moment a swap would be made.
var walkStep func(at string)

// trustedLink reports whether a link (described by link) in the folder
// described by parent can only have been made by root or the user euid.
func trustedLink(parent, link unix.Stat_t, euid uint32) bool {
	ours := func(uid uint32) bool { return uid == 0 || uid == euid }
	if !ours(parent.Uid) && parent.Mode&unix.S_ISVTX == 0 {
		return false
	}
	if parent.Mode&0o022 == 0 {
		return ours(parent.Uid)
	}
	// Others may write the folder: only its sticky bit keeps them from
	// replacing a link of ours.
	return parent.Mode&unix.S_ISVTX != 0 && ours(link.Uid)
}

// dirErr names what open(2) of name in the folder dirFD refused with
// O_NOFOLLOW|O_DIRECTORY: a link fails with ELOOP or, on Linux, ENOTDIR.
func dirErr(dirFD int, name string, err error) error {
	if !isLink(err) && !errors.Is(err, unix.ENOTDIR) {
		return err
	}
	var st unix.Stat_t
	if unix.Fstatat(dirFD, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return ErrLink
	}
	return err
}

func newDir(fd int, path string) *Dir {
	return &Dir{f: os.NewFile(uintptr(fd), path), path: path}
}

// do runs f with d's descriptor, holding the open file meanwhile: a
// concurrent Close waits for f, and a call after Close fails with
// os.ErrClosed.
func (d *Dir) do(f func(fd int) error) error {
	rc, err := d.f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = f(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// Path returns the path the folder was opened by, for messages.
func (d *Dir) Path() string { return d.path }

// Close closes the folder.
func (d *Dir) Close() error { return d.f.Close() }

// Stat describes the folder itself.
func (d *Dir) Stat() (fs.FileInfo, error) { return d.f.Stat() }

// Chmod changes the folder's own mode.
func (d *Dir) Chmod(mode fs.FileMode) error { return d.f.Chmod(mode) }

// Chown changes the folder's owner and group (-1 keeps one).
func (d *Dir) Chown(uid, gid int) error { return d.f.Chown(uid, gid) }

// Sync makes the folder's entries durable.
func (d *Dir) Sync() error {
	atomicfile.CountSyncs(1)
	return d.f.Sync()
}

// element checks that name is one plain element of a path.
func (d *Dir) element(op, name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') {
		return &fs.PathError{Op: op, Path: filepath.Join(d.path, name), Err: fs.ErrInvalid}
	}
	return nil
}

// Sub opens the folder rel below d, one element at a time, none of them
// followed when it is a link (an error wrapping [ErrLink]).
func (d *Dir) Sub(rel string) (*Dir, error) {
	cur := d
	for _, e := range strings.Split(filepath.Clean(rel), string(filepath.Separator)) {
		if err := cur.element("open", e); err != nil {
			return nil, closeBut(cur, d, err)
		}
		var next int
		err := cur.do(func(fd int) error {
			var err error
			if next, err = unix.Openat(fd, e, dirFlags, 0); err != nil {
				return dirErr(fd, e, err)
			}
			return nil
		})
		if err != nil {
			err = &fs.PathError{Op: "open", Path: filepath.Join(cur.path, e), Err: err}
			return nil, closeBut(cur, d, err)
		}
		sub := newDir(next, filepath.Join(cur.path, e))
		_ = closeBut(cur, d, nil)
		cur = sub
	}
	if cur == d {
		return nil, &fs.PathError{Op: "open", Path: rel, Err: fs.ErrInvalid}
	}
	return cur, nil
}

// closeBut closes cur unless it is keep, and returns err.
func closeBut(cur, keep *Dir, err error) error {
	if cur != keep {
		cur.Close()
	}
	return err
}

// Mkdir makes the folder name in d with perm (before the umask); an
// existing entry of that name is an error matching fs.ErrExist.
func (d *Dir) Mkdir(name string, perm fs.FileMode) error {
	if err := d.element("mkdir", name); err != nil {
		return err
	}
	if err := d.do(func(fd int) error { return unix.Mkdirat(fd, name, uint32(perm.Perm())) }); err != nil {
		return &fs.PathError{Op: "mkdir", Path: filepath.Join(d.path, name), Err: err}
	}
	return nil
}

// Remove removes the entry name of d, a file or a link (never what it
// points to), or an empty folder.
func (d *Dir) Remove(name string) error {
	if err := d.element("remove", name); err != nil {
		return err
	}
	err := d.do(func(fd int) error {
		err := unix.Unlinkat(fd, name, 0)
		if errors.Is(err, unix.EISDIR) || errors.Is(err, unix.EPERM) {
			// A folder: EISDIR on Linux, EPERM where POSIX allows it.
			if rerr := unix.Unlinkat(fd, name, unix.AT_REMOVEDIR); rerr == nil || !errors.Is(rerr, unix.ENOTDIR) {
				return rerr
			}
		}
		return err
	})
	if err != nil {
		return &fs.PathError{Op: "remove", Path: filepath.Join(d.path, name), Err: err}
	}
	return nil
}

// RemoveAll removes the entry name of d and, for a folder, everything in
// it, by descriptor: a link is removed, never followed. A missing name is
// no error.
func (d *Dir) RemoveAll(name string) error {
	if err := d.element("remove", name); err != nil {
		return err
	}
	sub, err := d.Sub(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case errors.Is(err, ErrLink), errors.Is(err, unix.ENOTDIR):
		return d.Remove(name) // a link or a file
	case err != nil:
		return err
	}
	des, err := sub.ReadDir()
	if err == nil {
		for _, de := range des {
			if err = sub.RemoveAll(de.Name()); err != nil {
				break
			}
		}
	}
	sub.Close()
	if err != nil {
		return err
	}
	if err := d.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// Exists reports whether d holds an entry name, a link or anything else.
func (d *Dir) Exists(name string) (bool, error) {
	_, err := d.lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// lstat describes the entry name of d itself, a link too.
func (d *Dir) lstat(name string) (unix.Stat_t, error) {
	var st unix.Stat_t
	if err := d.element("lstat", name); err != nil {
		return st, err
	}
	if err := d.do(func(fd int) error { return unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) }); err != nil {
		return st, &fs.PathError{Op: "lstat", Path: filepath.Join(d.path, name), Err: err}
	}
	return st, nil
}

// OpenFile opens the entry name of d with flag (as os.OpenFile's, with
// O_NOFOLLOW added: a link there is refused, never followed or created
// through) and perm for a file it creates.
func (d *Dir) OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	if err := d.element("open", name); err != nil {
		return nil, err
	}
	var nfd int
	err := d.do(func(fd int) error {
		var err error
		nfd, err = unix.Openat(fd, name, flag|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
		return err
	})
	path := filepath.Join(d.path, name)
	if err != nil {
		if isLink(err) {
			err = ErrNotRegular
		}
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(nfd), path), nil
}

// Open opens the entry name of d for reading as [Open] does: a link, a
// directory, a pipe or a device is refused with [ErrNotRegular].
func (d *Dir) Open(name string) (*os.File, fs.FileInfo, error) {
	f, err := d.OpenFile(name, unix.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, nil, err
	}
	return regular(f)
}

// ReadFile reads the entry name of d as [ReadFile] reads a path.
func (d *Dir) ReadFile(name string, limit int64) ([]byte, fs.FileInfo, error) {
	return readOpened(limit)(d.Open(name))
}

// ReadDir lists d's entries, in no set order.
func (d *Dir) ReadDir() ([]fs.DirEntry, error) {
	var nfd int
	err := d.do(func(fd int) error {
		var err error
		nfd, err = unix.Openat(fd, ".", dirFlags, 0)
		return err
	})
	if err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: d.path, Err: err}
	}
	f := os.NewFile(uintptr(nfd), d.path)
	defer f.Close()
	return f.ReadDir(-1)
}

// Move renames the entry name of d to newName in to, which may be d.
// It never replaces an entry there: when newName exists, it fails with an
// error matching fs.ErrExist and changes nothing. The rename is durable
// once both folders are synced, which is left to the caller.
func (d *Dir) Move(name string, to *Dir, newName string) error {
	if err := d.element("rename", name); err != nil {
		return err
	}
	if err := to.element("rename", newName); err != nil {
		return err
	}
	err := d.do(func(fromFD int) error {
		return to.do(func(toFD int) error { return renameNoReplace(fromFD, name, toFD, newName) })
	})
	if err != nil {
		return &fs.PathError{Op: "rename", Path: filepath.Join(d.path, name), Err: err}
	}
	return nil
}

// WriteFile replaces the entry name of d with a regular file holding data,
// created with perm (before the umask): the data goes to a temporary file
// in d, synced, then renamed over name (a link there is replaced, never
// followed), and d is synced. When a step fails, name is as it was.
func (d *Dir) WriteFile(name string, data []byte, perm fs.FileMode) error {
	if err := d.Replace(name, data, perm); err != nil {
		return err
	}
	return d.Sync()
}

// Replace is [Dir.WriteFile] without the sync of d, for a caller that
// syncs the folder once for many files: name is whole whenever it is
// there, but a crash before d's sync may bring the old content back.
func (d *Dir) Replace(name string, data []byte, perm fs.FileMode) (err error) {
	if err := d.element("write", name); err != nil {
		return err
	}
	var r [6]byte
	_, _ = rand.Read(r[:])
	base := name
	if len(base) > 64 { // keep the temporary name within NAME_MAX
		base = strings.ToValidUTF8(base[:64], "")
	}
	tmp := atomicfile.TempPrefix + base + "." + hex.EncodeToString(r[:])
	path := filepath.Join(d.path, name)
	f, err := d.OpenFile(tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, perm)
	if err != nil {
		return &fs.PathError{Op: "write", Path: path, Err: errors.Unwrap(err)}
	}
	defer func() {
		if err != nil {
			_ = d.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		f.Close()
		return &fs.PathError{Op: "write", Path: path, Err: err}
	}
	atomicfile.CountSyncs(1)
	if err := f.Sync(); err != nil {
		f.Close()
		return &fs.PathError{Op: "sync", Path: path, Err: err}
	}
	if err := f.Close(); err != nil {
		return &fs.PathError{Op: "close", Path: path, Err: err}
	}
	if err := d.do(func(fd int) error { return unix.Renameat(fd, tmp, fd, name) }); err != nil {
		return &fs.PathError{Op: "write", Path: path, Err: err}
	}
	return nil
}

// Entry is what [Dir.Walk] hands its function: an entry below the walked
// folder, opened without following a link or waiting on a pipe.
type Entry struct {
	Path string      // the folder's path joined with the entry's names, for messages
	File *os.File    // the open entry: act on it (Chown, Chmod), never on Path
	Info fs.FileInfo // of the open entry
	Dir  bool        // a folder, which Walk enters after fn returns
}

// Walk calls fn for every folder and regular file below d (folders before
// what they hold), each opened by descriptor without following a link:
// links, sockets, pipes and devices are passed over, as is an entry
// swapped for one of them, or removed, between the listing and the
// opening. A folder is entered through the descriptor fn saw.
func (d *Dir) Walk(fn func(Entry) error) error {
	des, err := d.ReadDir()
	if err != nil {
		return err
	}
	for _, de := range des {
		if t := de.Type(); t != 0 && !t.IsDir() {
			continue // neither a folder nor a regular file
		}
		f, err := d.OpenFile(de.Name(), unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
		switch {
		case errors.Is(err, ErrNotRegular), errors.Is(err, fs.ErrNotExist), errors.Is(err, unix.ENXIO):
			continue // swapped for a link or a socket, or gone, since the listing
		case err != nil:
			return err
		}
		info, err := f.Stat()
		if err != nil {
			f.Close()
			return err
		}
		if !info.IsDir() && !info.Mode().IsRegular() {
			f.Close()
			continue
		}
		e := Entry{Path: filepath.Join(d.path, de.Name()), File: f, Info: info, Dir: info.IsDir()}
		err = fn(e)
		if err == nil && e.Dir {
			// The same open file: one descriptor, closed once, below.
			err = (&Dir{f: f, path: e.Path}).Walk(fn)
		}
		f.Close()
		if err != nil {
			return err
		}
	}
	return nil
}
