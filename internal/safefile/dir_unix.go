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
// link points.
type Dir struct {
	f    *os.File
	fd   int
	path string // as opened: for messages only
}

// maxLinks bounds the links followed while opening one path, as the
// kernel's own resolution does (it refuses after 40).
const maxLinks = 40

// OpenDir opens the folder at path. A symbolic link among its elements is
// followed only where it lies in a folder that only root or this process's
// user can write: owned by one of them, with no write bit for the group or
// others (or, with the sticky bit, a link owned by one of them). Anywhere
// else, as in the 2770 folders the staff's group shares with the service, a
// link could have been planted by someone with fewer rights, and OpenDir
// fails with an error wrapping [ErrLink]. The path is walked element by
// element, and the folder opened is checked to be the one the walk found.
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
	real, want, err := resolveTrusted(abs)
	if err != nil {
		return nil, err
	}
	fd, err := unix.Open(real, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: dirErr(unix.AT_FDCWD, real, err)}
	}
	d := newDir(fd, path)
	var got unix.Stat_t
	if err := unix.Fstat(fd, &got); err != nil {
		d.Close()
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	if got.Dev != want.Dev || got.Ino != want.Ino {
		// An element in a folder others can write was swapped for a link
		// between the walk and the opening.
		d.Close()
		return nil, &fs.PathError{Op: "open", Path: path, Err: ErrLink}
	}
	return d, nil
}

// resolveTrusted walks abs from the root, following a link only where
// [OpenDir] allows it, and returns the path without links and the
// description of the folder it names.
func resolveTrusted(abs string) (string, unix.Stat_t, error) {
	euid := uint32(os.Geteuid())
	var st unix.Stat_t
	links := 0
	done := "/"
	rest := strings.Split(abs, "/")
	if err := unix.Lstat(done, &st); err != nil {
		return "", st, &fs.PathError{Op: "open", Path: abs, Err: err}
	}
	for len(rest) > 0 {
		if walkStep != nil {
			walkStep(done)
		}
		e := rest[0]
		rest = rest[1:]
		switch e {
		case "", ".":
			continue
		case "..":
			// done holds no link, so its parent is lexical.
			done = filepath.Dir(done)
			if err := unix.Lstat(done, &st); err != nil {
				return "", st, &fs.PathError{Op: "open", Path: abs, Err: err}
			}
			continue
		}
		parent := st
		next := filepath.Join(done, e)
		if err := unix.Lstat(next, &st); err != nil {
			return "", st, &fs.PathError{Op: "open", Path: abs, Err: err}
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			done = next
		case unix.S_IFLNK:
			if !trustedLink(parent, st, euid) {
				return "", st, &fs.PathError{Op: "open", Path: abs, Err: fmt.Errorf("%s: %w", next, ErrLink)}
			}
			if links++; links > maxLinks {
				return "", st, &fs.PathError{Op: "open", Path: abs, Err: unix.ELOOP}
			}
			target, err := os.Readlink(next)
			if err != nil {
				return "", st, &fs.PathError{Op: "open", Path: abs, Err: err}
			}
			if filepath.IsAbs(target) {
				done = "/"
			}
			rest = append(strings.Split(target, "/"), rest...)
			if err := unix.Lstat(done, &st); err != nil {
				return "", st, &fs.PathError{Op: "open", Path: abs, Err: err}
			}
		default:
			return "", st, &fs.PathError{Op: "open", Path: abs, Err: fmt.Errorf("%s: %w", next, unix.ENOTDIR)}
		}
	}
	return done, st, nil
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
	return &Dir{f: os.NewFile(uintptr(fd), path), fd: fd, path: path}
}

// Path returns the path the folder was opened by, for messages.
func (d *Dir) Path() string { return d.path }

// Close closes the folder.
func (d *Dir) Close() error { return d.f.Close() }

// Stat describes the folder itself.
func (d *Dir) Stat() (fs.FileInfo, error) { return d.f.Stat() }

// Chmod and Chown change the folder itself.
func (d *Dir) Chmod(mode fs.FileMode) error { return d.f.Chmod(mode) }

// Chown changes the folder's owner and group (-1 keeps one).
func (d *Dir) Chown(uid, gid int) error { return d.f.Chown(uid, gid) }

// Sync makes the folder's entries durable.
func (d *Dir) Sync() error { return d.f.Sync() }

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
		fd, err := unix.Openat(cur.fd, e, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			err = &fs.PathError{Op: "open", Path: filepath.Join(cur.path, e), Err: dirErr(cur.fd, e, err)}
			return nil, closeBut(cur, d, err)
		}
		next := newDir(fd, filepath.Join(cur.path, e))
		_ = closeBut(cur, d, nil)
		cur = next
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
	if err := unix.Mkdirat(d.fd, name, uint32(perm.Perm())); err != nil {
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
	err := unix.Unlinkat(d.fd, name, 0)
	if errors.Is(err, unix.EISDIR) || errors.Is(err, unix.EPERM) {
		err = unix.Unlinkat(d.fd, name, unix.AT_REMOVEDIR)
	}
	if err != nil {
		return &fs.PathError{Op: "remove", Path: filepath.Join(d.path, name), Err: err}
	}
	return nil
}

// Exists reports whether d holds an entry name, a link or anything else.
func (d *Dir) Exists(name string) (bool, error) {
	if err := d.element("lstat", name); err != nil {
		return false, err
	}
	var st unix.Stat_t
	err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	if err != nil {
		return false, &fs.PathError{Op: "lstat", Path: filepath.Join(d.path, name), Err: err}
	}
	return true, nil
}

// openEntry opens the entry name of d for reading, never following a link
// nor waiting on a pipe.
func (d *Dir) openEntry(name string) (*os.File, error) {
	fd, err := unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), filepath.Join(d.path, name)), nil
}

// Open opens the entry name of d for reading as [Open] does: a link, a
// directory, a pipe or a device is refused with [ErrNotRegular].
func (d *Dir) Open(name string) (*os.File, fs.FileInfo, error) {
	if err := d.element("open", name); err != nil {
		return nil, nil, err
	}
	fd, err := unix.Openat(d.fd, name, unix.O_RDONLY|openFlags|unix.O_CLOEXEC, 0)
	path := filepath.Join(d.path, name)
	if err != nil {
		if isLink(err) {
			err = ErrNotRegular
		}
		return nil, nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !info.Mode().IsRegular() {
		f.Close()
		return nil, nil, &fs.PathError{Op: "open", Path: path, Err: ErrNotRegular}
	}
	return f, info, nil
}

// ReadFile reads the entry name of d as [ReadFile] reads a path.
func (d *Dir) ReadFile(name string, limit int64) ([]byte, fs.FileInfo, error) {
	f, info, err := d.Open(name)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	b, err := Read(f, limit)
	if err != nil {
		return nil, nil, err
	}
	return b, info, nil
}

// ReadDir lists d's entries, in no set order.
func (d *Dir) ReadDir() ([]fs.DirEntry, error) {
	fd, err := unix.Openat(d.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: d.path, Err: err}
	}
	f := os.NewFile(uintptr(fd), d.path)
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
	if err := renameNoReplace(d.fd, name, to.fd, newName); err != nil {
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
	tmp := tempPrefix + base + "." + hex.EncodeToString(r[:])
	path := filepath.Join(d.path, name)
	fd, err := unix.Openat(d.fd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
	if err != nil {
		return &fs.PathError{Op: "write", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	defer func() {
		if err != nil {
			_ = unix.Unlinkat(d.fd, tmp, 0)
		}
	}()
	if _, err := f.Write(data); err != nil {
		f.Close()
		return &fs.PathError{Op: "write", Path: path, Err: err}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return &fs.PathError{Op: "sync", Path: path, Err: err}
	}
	if err := f.Close(); err != nil {
		return &fs.PathError{Op: "close", Path: path, Err: err}
	}
	if err := unix.Renameat(d.fd, tmp, d.fd, name); err != nil {
		return &fs.PathError{Op: "write", Path: path, Err: err}
	}
	return nil
}

// tempPrefix starts a temporary file's name: atomicfile's, so that what a
// crash leaves is told apart by the same rule.
const tempPrefix = atomicfile.TempPrefix

// Entry is what [Dir.Walk] hands its function: an entry below the walked
// folder, opened without following a link or waiting on a pipe.
type Entry struct {
	Path string      // the folder's path joined with the entry's names, for messages
	File *os.File    // the open entry: act on it (Chown, Chmod), never on Path
	Info fs.FileInfo // of the open entry
	Dir  bool        // a folder, which Walk enters after fn returns
}

// Walk calls fn for every entry below d (folders before what they hold),
// each opened by descriptor without following a link: a link is passed
// over, as is an entry swapped for one between the listing and the
// opening. A folder is entered through the descriptor fn saw.
func (d *Dir) Walk(fn func(Entry) error) error {
	des, err := d.ReadDir()
	if err != nil {
		return err
	}
	for _, de := range des {
		if de.Type()&fs.ModeSymlink != 0 {
			continue
		}
		f, err := d.openEntry(de.Name())
		if isLink(err) || errors.Is(err, fs.ErrNotExist) {
			continue // swapped for a link, or gone, since the listing
		}
		if err != nil {
			return &fs.PathError{Op: "open", Path: filepath.Join(d.path, de.Name()), Err: err}
		}
		info, err := f.Stat()
		if err != nil {
			f.Close()
			return err
		}
		e := Entry{Path: filepath.Join(d.path, de.Name()), File: f, Info: info, Dir: info.IsDir()}
		err = fn(e)
		if err == nil && e.Dir {
			// The same open file: one descriptor, closed once, below.
			err = (&Dir{f: f, fd: int(f.Fd()), path: e.Path}).Walk(fn)
		}
		f.Close()
		if err != nil {
			return err
		}
	}
	return nil
}
