//go:build unix

package files_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	gosync "sync"
	"testing"
	"testing/synctest"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ticketbridge/ticketbridge/adapters/files"
)

// lockedBuffer is a log's buffer read by the test and written by the
// adapter.
type lockedBuffer struct {
	mu  gosync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestHeldLockIsSaidOnce: an adapter that finds its folder's lock held by
// another process (one stopped or hung while it held it) waits, says so
// in its log once the wait is long, once, and works when the lock is
// freed.
func TestHeldLockIsSaidOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		var log lockedBuffer
		a, err := files.New(t.Context(), files.Options{Dir: dir, Logger: slog.New(slog.NewTextHandler(&log, nil))})
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		other, err := os.Open(filepath.Join(dir, ".lock"))
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		if err := unix.Flock(int(other.Fd()), unix.LOCK_EX); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		if _, _, err := a.Changes(ctx, ""); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "another process holds it") {
			t.Fatalf("Changes with the lock held elsewhere: %v; want the deadline, naming the lock", err)
		}
		if n := strings.Count(log.String(), "another process holds its lock"); n != 1 {
			t.Fatalf("a minute's wait was logged %d times, want once:\n%s", n, log.String())
		}
		if err := unix.Flock(int(other.Fd()), unix.LOCK_UN); err != nil {
			t.Fatal(err)
		}
		if _, _, err := a.Changes(t.Context(), ""); err != nil {
			t.Fatalf("Changes once the lock is freed: %v", err)
		}
	})
}
