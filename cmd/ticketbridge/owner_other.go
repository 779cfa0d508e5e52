//go:build !unix

package main

import (
	"github.com/ticketbridge/ticketbridge/internal/config"
)

// giveToOwner does nothing where files have no Unix owner.
func giveToOwner(dir string) error { return nil }

// useUnitUmask does nothing where there is no umask.
func useUnitUmask(config.Layout) (restore func()) { return func() {} }
