//go:build unix

package main

import (
	"os"
	"strconv"
	"syscall"

	"github.com/ticketbridge/ticketbridge/internal/config"
)

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
