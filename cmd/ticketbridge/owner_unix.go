//go:build unix

package main

import (
	"os"
	"strconv"
	"syscall"

	"github.com/ticketbridge/ticketbridge/internal/config"
	"github.com/ticketbridge/ticketbridge/internal/safefile"
)

// giveToOwner gives what root made below dir (folders, and plain files
// with one link) to dir's owner, keeping their groups; a dir of root's in
// a folder of another's is given, with what it holds, to that folder's
// owner. It does something only for root: a command run by root on the
// service's state directory or the staff's helpdesk folder must not leave
// files the service (another user) cannot open.
//
// The folder is opened without following a link staff could have planted
// on its way, and walked by descriptor (see safefile.Dir): a sub-folder
// swapped for a link mid-walk hands nothing elsewhere to the service.
// What is not root's (a staff member's reply) stays its owner's.
func giveToOwner(dir string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	// Under the unit's DynamicUser=yes, /var/lib/ticketbridge is a link to
	// private/ticketbridge, in root's /var/lib: OpenDir follows it.
	d, err := safefile.OpenDir(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	fi, err := d.Stat()
	if err != nil {
		return err
	}
	owner, _, ok := config.FileOwner(fi)
	if !ok {
		return nil
	}
	if owner == 0 {
		// A folder root made (once making a hotel's helpdesk folder in
		// the staff's): it is the service's when its parent is.
		parent, err := safefile.OpenDir(dir + "/..")
		if err != nil {
			return err
		}
		pfi, err := parent.Stat()
		parent.Close()
		if err != nil {
			return err
		}
		if owner, _, ok = config.FileOwner(pfi); !ok || owner == 0 {
			return nil
		}
		if err := d.Chown(owner, -1); err != nil {
			return err
		}
	}
	return d.Walk(func(e safefile.Entry) error {
		if beforeOwnerChange != nil {
			beforeOwnerChange(e.Path)
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
