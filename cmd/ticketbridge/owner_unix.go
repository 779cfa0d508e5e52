//go:build unix

package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/ticketbridge/ticketbridge/internal/config"
)

// giveToOwner makes every file and folder below dir owned by dir's owner,
// keeping their groups; a dir of root's in a folder of another's is given,
// with what it holds, to that folder's owner. It does something only for root: a command run by
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
	if !ok {
		return nil
	}
	owner := int(st.Uid)
	if owner == 0 {
		// A folder root made (once making a hotel's helpdesk folder in
		// the staff's): it is the service's when its parent is.
		pfi, err := os.Stat(filepath.Dir(dir))
		if err != nil {
			return err
		}
		pst, ok := pfi.Sys().(*syscall.Stat_t)
		if !ok || pst.Uid == 0 {
			return nil
		}
		owner = int(pst.Uid)
	}
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if beforeOwnerChange != nil {
			beforeOwnerChange(p)
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

// beforeOwnerChange, when a test sets it, runs as giveToOwner reaches each
// entry: the moment a swap would be made.
var beforeOwnerChange func(path string)

// useUnitUmask sets the process's umask to the UMask= of the unit l
// installs, so that what once, run by root in a shell, makes is made as
// the service would make it (folders the staff's group may write); it
// returns what restores the umask of before. Without an installed unit
// it does nothing.
func useUnitUmask(l config.Layout) (restore func()) {
	nop := func() {}
	files := l.UnitFiles()
	if len(files) == 0 {
		return nop
	}
	if _, err := os.Stat(files[0]); err != nil {
		return nop
	}
	u, err := config.ReadUnit(files...)
	if err != nil || u.UMask == "" {
		return nop
	}
	m, err := strconv.ParseUint(u.UMask, 8, 32)
	if err != nil {
		return nop
	}
	old := syscall.Umask(int(m))
	return func() { syscall.Umask(old) }
}
