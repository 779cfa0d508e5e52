package main

import (
	"context"
	"fmt"
	"io"
	"runtime"

	"github.com/ticketbridge/ticketbridge/internal/version"
)

// runVersion prints the version, the commit and the Go version of the binary.
func runVersion(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("version", "Print the version, the commit and the Go version.", stdout)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	v, c, g := version.Get()
	fmt.Fprintf(stdout, "ticketbridge %s\ncommit %s\n%s %s/%s\n", v, c, g, runtime.GOOS, runtime.GOARCH)
	return nil
}
