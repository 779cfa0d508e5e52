//go:build !unix

package main

import (
	"github.com/ticketbridge/ticketbridge/internal/config"
)

// useUnitUmask does nothing where there is no umask.
func useUnitUmask(config.Layout) (restore func()) { return func() {} }
