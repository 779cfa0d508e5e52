package main

import (
	"context"
	"fmt"
	"runtime"

	"github.com/ticketbridge/ticketbridge/internal/version"
)

// runVersion prints the version, the commit and the Go version of the binary.
func runVersion(_ context.Context, sh shell, args []string) error {
	stdout := sh.stdout
	fs := newFlagSet("version", "Print the version, the commit and the Go version.", stdout)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	v, c, g := version.Get()
	fmt.Fprintf(stdout, "ticketbridge %s\ncommit %s\n%s %s/%s\n", v, c, g, runtime.GOOS, runtime.GOARCH)
	return nil
}
