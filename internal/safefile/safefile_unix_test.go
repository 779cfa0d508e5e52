//go:build unix

package safefile_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/ticketbridge/ticketbridge/internal/safefile"
)

func TestOpenRefusesLinksAndPipes(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "api-key")
	if err := os.WriteFile(key, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(key, link); err != nil {
		t.Fatal(err)
	}
	if b, _, err := safefile.ReadFile(link, 1<<10); !errors.Is(err, safefile.ErrNotRegular) || len(b) != 0 {
		t.Errorf("ReadFile(symlink) = %q, %v; want ErrNotRegular and nothing read", b, err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	// Without O_NONBLOCK this open would wait for a writer forever.
	if _, _, err := safefile.ReadFile(fifo, 1<<10); !errors.Is(err, safefile.ErrNotRegular) {
		t.Errorf("ReadFile(fifo) = %v; want ErrNotRegular", err)
	}
	if _, _, err := safefile.ReadFile(dir, 1<<10); !errors.Is(err, safefile.ErrNotRegular) {
		t.Errorf("ReadFile(directory) = %v; want ErrNotRegular", err)
	}
	b, info, err := safefile.ReadFile(key, 1<<10)
	if err != nil || string(b) != secret+"\n" || info.Size() != int64(len(b)) {
		t.Errorf("ReadFile(regular) = %q, %v, %v", b, info, err)
	}
	if _, _, err := safefile.ReadFile(key, 4); !errors.Is(err, safefile.ErrTooBig) {
		t.Errorf("ReadFile over the limit = %v; want ErrTooBig", err)
	}
}
