package main

import (
	"context"
	"errors"
	"io"
)

// Commands whose packages are still being built answer plainly.
var errNotBuilt = errors.New("not available in this build yet")

func runDaemon(context.Context, []string, io.Writer, io.Writer) error { return errNotBuilt }
func runOnce(context.Context, []string, io.Writer, io.Writer) error   { return errNotBuilt }
func runStatus(context.Context, []string, io.Writer, io.Writer) error { return errNotBuilt }
func runDemo(context.Context, []string, io.Writer, io.Writer) error   { return errNotBuilt }
func runState(context.Context, []string, io.Writer, io.Writer) error  { return errNotBuilt }
