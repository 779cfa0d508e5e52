package testutil

import (
	"os"
	"strconv"
	"testing"
)

// EnvInt reads a positive whole number from the environment variable
// name, def when it is unset: the size of a benchmark's run (its hotels,
// requests, tickets). A value that is not one fails tb, naming the
// variable.
func EnvInt(tb testing.TB, name string, def int) int {
	tb.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		tb.Fatalf("%s=%q: want a positive whole number", name, v)
	}
	return n
}
