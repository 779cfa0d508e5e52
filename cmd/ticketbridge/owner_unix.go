//go:build unix

package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// giveToOwner makes every file and folder below dir owned by dir's owner,
// keeping their groups. It does something only for root: a command run by
// root on the service's state directory must not leave files the service
// (another user) cannot open.
func giveToOwner(dir string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	// Under the unit's DynamicUser=yes, /var/lib/ticketbridge is a link to
	// private/ticketbridge: walk what it points to (a walk does not follow
	// a link at its root).
	dir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return err
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || st.Uid == 0 {
		return nil
	}
	owner := int(st.Uid)
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if s, ok := info.Sys().(*syscall.Stat_t); ok && int(s.Uid) != owner {
			return os.Lchown(p, owner, -1)
		}
		return nil
	})
}

// fileOwner returns the owner and group ids of the file fi describes.
func fileOwner(fi fs.FileInfo) (uid, gid int, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return int(st.Uid), int(st.Gid), true
}
