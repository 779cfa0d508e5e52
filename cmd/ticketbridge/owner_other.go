//go:build !unix

package main

import (
	"io/fs"

	"github.com/ticketbridge/ticketbridge/internal/config"
)

// giveToOwner does nothing where files have no Unix owner.
func giveToOwner(dir string) error { return nil }

// fileOwner reports no owner where files have no Unix owner.
func fileOwner(fi fs.FileInfo) (uid, gid int, ok bool) { return 0, 0, false }

// useUnitUmask does nothing where there is no umask.
func useUnitUmask(config.Layout) (restore func()) { return func() {} }
