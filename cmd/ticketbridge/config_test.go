package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestRunUsageAndVersion(t *testing.T) {
	var out, errb bytes.Buffer
	if err := run(context.Background(), []string{"version"}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "ticketbridge ") || !strings.Contains(out.String(), "go1.") {
		t.Fatalf("version output %q", out.String())
	}
	err := run(context.Background(), []string{"frobnicate"}, &out, &errb)
	if exitCode(err, &errb) != 2 {
		t.Fatalf("unknown command: exit %d, want 2", exitCode(err, &errb))
	}
	out.Reset()
	if code := exitCode(run(context.Background(), []string{"version", "--help"}, &out, &errb), &errb); code != 0 || !strings.Contains(out.String(), "Usage: ticketbridge version") {
		t.Fatalf("version --help: exit %d, output %q", code, out.String())
	}
}
