//go:build unix

package safefile

// This file is what a command run by root does in the service's and the
// staff's folders (once, hotels adopt): moving entries between folders and
// handing what root made to the folder's owner, neither through a link
// staff could have planted.

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// HandOver gives what root made below dir (folders, and plain files
// with one link) to dir's owner, keeping their groups; a dir of root's in
// a folder of another's is given, with what it holds, to that folder's
// owner. It does something only for root: a command run by root on the
// service's state directory or the staff's helpdesk folder must not leave
// files the service (another user) cannot open.
//
// The folder is opened without following a link staff could have planted
// on its way, and walked by descriptor (see [Dir]): a sub-folder
// swapped for a link mid-walk hands nothing elsewhere to the service.
// What is not root's (a staff member's reply) stays its owner's.
func HandOver(dir string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	// Under the unit's DynamicUser=yes, /var/lib/ticketbridge is a link to
	// private/ticketbridge, in root's /var/lib: OpenDir follows it.
	d, err := OpenDir(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	fi, err := d.Stat()
	if err != nil {
		return err
	}
	owner, _, ok := fileOwner(fi)
	if !ok {
		return nil
	}
	if owner == 0 {
		// A folder root made (once making a hotel's helpdesk folder in
		// the staff's): it is the service's when its parent is.
		parent, err := OpenDir(dir + "/..")
		if err != nil {
			return err
		}
		pfi, err := parent.Stat()
		parent.Close()
		if err != nil {
			return err
		}
		if owner, _, ok = fileOwner(pfi); !ok || owner == 0 {
			return nil
		}
		if err := d.Chown(owner, -1); err != nil {
			return err
		}
	}
	return d.Walk(func(e Entry) error {
		if beforeHandOver != nil {
			beforeHandOver(e.Path)
		}
		st, ok := e.Info.Sys().(*syscall.Stat_t)
		if !ok || st.Uid != 0 {
			return nil
		}
		if !e.Dir && (!e.Info.Mode().IsRegular() || st.Nlink != 1) {
			return nil // a hard link could be root's file elsewhere
		}
		return e.File.Chown(owner, -1)
	})
}

// beforeHandOver, when a test sets it, runs as HandOver reaches each
// entry: the moment a swap would be made.
var beforeHandOver func(path string)

// fileOwner returns fi's owner and group.
func fileOwner(fi fs.FileInfo) (uid, gid int, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return int(st.Uid), int(st.Gid), true
}

// MoveInto moves the entries names of the folder from to the folder to,
// as news, making to like from when it does not exist. Both folders are
// opened without following a link staff could have planted, and each
// entry moved by descriptor, never over an entry of to: a name taken
// meanwhile fails the move and leaves both as they are.
func MoveInto(from, to string, names, news []string) error {
	src, err := OpenDir(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := MkdirLike(to, src)
	if err != nil {
		return err
	}
	defer dst.Close()
	for i, name := range names {
		err := src.Move(name, dst, news[i])
		if i > 0 && errors.Is(err, fs.ErrNotExist) {
			continue // the state's status snapshot may be missing
		}
		if err != nil {
			return err
		}
	}
	return errors.Join(dst.Sync(), src.Sync())
}

// MkdirLike opens the folder dir, making it first when it does not exist
// with the mode of like (the setgid bit too), and, run by root, its owner
// and group. Neither dir nor its parent is reached through a link staff
// could have planted (see [OpenDir]).
func MkdirLike(dir string, like *Dir) (*Dir, error) {
	if d, err := OpenDir(dir); !errors.Is(err, fs.ErrNotExist) {
		return d, err
	}
	parentPath, name := filepath.Split(filepath.Clean(dir))
	parent, err := OpenDir(parentPath)
	if errors.Is(err, fs.ErrNotExist) && filepath.Clean(parentPath) != filepath.Clean(dir) {
		parent, err = MkdirLike(parentPath, like)
	}
	if err != nil {
		return nil, err
	}
	defer parent.Close()
	if err := parent.Mkdir(name, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, err
	}
	d, err := parent.Sub(name)
	if err != nil {
		return nil, err
	}
	fi, err := like.Stat()
	if err == nil {
		err = d.Chmod(fi.Mode() & (fs.ModePerm | fs.ModeSetgid))
	}
	if uid, gid, ok := fileOwner(fi); err == nil && ok && os.Geteuid() == 0 {
		err = d.Chown(uid, gid)
	}
	if err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}
