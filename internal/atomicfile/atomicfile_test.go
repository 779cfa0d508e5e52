package atomicfile_test

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ticketbridge/ticketbridge/internal/atomicfile"
)

// noTemps fails when dir holds a temporary file.
func noTemps(t *testing.T, dir string) {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if atomicfile.IsTemp(e.Name()) {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}

func TestWriteFileCreatesAndReplaces(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "status.json")
	for _, content := range []string{"first\n", "second, longer than the first\n", ""} {
		if err := atomicfile.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatalf("WriteFile(%q): %v", content, err)
		}
		got, err := os.ReadFile(p)
		if err != nil || string(got) != content {
			t.Fatalf("read back %q, %v; want %q", got, err, content)
		}
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		t.Errorf("mode %s, want no access for group and others", fi.Mode().Perm())
	}
	noTemps(t, dir)
}

// TestReplaceLeavesTheDirectoryToTheCaller: Replace writes the file whole,
// syncing the file but not its directory, which WriteFile syncs.
func TestReplaceLeavesTheDirectoryToTheCaller(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "ticket.json")
	for _, c := range []struct {
		write func([]byte) error
		syncs int64
	}{
		{func(b []byte) error { return atomicfile.Replace(p, b, 0o600) }, 1},
		{func(b []byte) error { return atomicfile.WriteFile(p, b, 0o600) }, 2},
	} {
		s := atomicfile.Syncs()
		if err := c.write([]byte("content\n")); err != nil {
			t.Fatal(err)
		}
		if got := atomicfile.Syncs() - s; got != c.syncs {
			t.Errorf("%d syncs, want %d", got, c.syncs)
		}
		if got, err := os.ReadFile(p); err != nil || string(got) != "content\n" {
			t.Fatalf("read back %q, %v", got, err)
		}
	}
	noTemps(t, dir)
}

// TestWriteNewRefusesAnExistingFile: WriteNew writes a new file, synced,
// and leaves a file already there as it is.
func TestWriteNewRefusesAnExistingFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "ticket.json")
	s := atomicfile.Syncs()
	if err := atomicfile.WriteNew(p, []byte("first\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := atomicfile.Syncs() - s; got != 1 {
		t.Errorf("%d syncs, want 1", got)
	}
	if err := atomicfile.WriteNew(p, []byte("second\n"), 0o600); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("WriteNew over a file: %v, want fs.ErrExist", err)
	}
	if got, err := os.ReadFile(p); err != nil || string(got) != "first\n" {
		t.Fatalf("read back %q, %v", got, err)
	}
}

func TestWriteKeepsTheOldFileWhenFillFails(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "backup.db")
	if err := atomicfile.WriteFile(p, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("disk full")
	err := atomicfile.Write(p, 0o600, func(w io.Writer) error {
		io.WriteString(w, "half of the new")
		return boom
	})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), p) {
		t.Fatalf("Write = %v, want the fill's error naming the path", err)
	}
	if got, _ := os.ReadFile(p); string(got) != "old" {
		t.Errorf("after a failed write the file holds %q, want the old content", got)
	}
	noTemps(t, dir)
}

func TestWriteOverADirectoryFails(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "taken")
	if err := os.Mkdir(p, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.WriteFile(p, []byte("x"), 0o600); err == nil {
		t.Fatal("WriteFile over a directory succeeded")
	}
	noTemps(t, dir)
}

func TestCreateRefusesAnExistingFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "00000000000000000001.json")
	if err := atomicfile.Create(p, []byte("first"), 0o600); err != nil {
		t.Fatalf("Create: %v", err)
	}
	err := atomicfile.Create(p, []byte("second"), 0o600)
	if !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Create over an existing file = %v, want fs.ErrExist", err)
	}
	if got, _ := os.ReadFile(p); string(got) != "first" {
		t.Errorf("the existing file holds %q, want it untouched", got)
	}
	noTemps(t, dir)
}

func TestLongNamesFit(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, strings.Repeat("é", 120)+".json") // 245 bytes
	if err := atomicfile.WriteFile(p, []byte("x"), 0o600); err != nil {
		t.Fatalf("WriteFile of a 245-byte name: %v", err)
	}
}

func TestSyncDirOfAMissingDirectory(t *testing.T) {
	if err := atomicfile.SyncDir(filepath.Join(t.TempDir(), "gone")); err == nil {
		t.Error("SyncDir of a missing directory succeeded")
	}
}

// TestReadersSeeWholeVersions reads the file while it is rewritten: every
// read must find one whole version, never a mix or a short file.
func TestReadersSeeWholeVersions(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "ticket.json")
	versions := [][]byte{bytes.Repeat([]byte("a"), 64<<10), bytes.Repeat([]byte("b"), 64<<10)}
	if err := atomicfile.WriteFile(p, versions[0], 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			got, err := os.ReadFile(p)
			if err != nil {
				t.Errorf("read: %v", err)
				return
			}
			if !bytes.Equal(got, versions[0]) && !bytes.Equal(got, versions[1]) {
				t.Errorf("read %d bytes that are neither version", len(got))
				return
			}
		}
	}()
	for i := range 100 {
		if err := atomicfile.WriteFile(p, versions[i%2], 0o600); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	wg.Wait()
	noTemps(t, dir)
}

// TestWriteVolatileSyncsNothing: WriteVolatile replaces the file whole,
// with its mode and no temporary file left, and makes no fsync.
func TestWriteVolatileSyncsNothing(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "status.json")
	before := atomicfile.Syncs()
	for _, content := range []string{"first\n", "second, longer than the first\n"} {
		if err := atomicfile.WriteVolatile(p, []byte(content), 0o600); err != nil {
			t.Fatalf("WriteVolatile(%q): %v", content, err)
		}
		if got, err := os.ReadFile(p); err != nil || string(got) != content {
			t.Fatalf("read back %q, %v; want %q", got, err, content)
		}
	}
	if n := atomicfile.Syncs() - before; n != 0 {
		t.Errorf("%d fsyncs, want none", n)
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm()&0o077 != 0 {
		t.Errorf("stat: %v, %v; want no access for group and others", fi, err)
	}
	noTemps(t, dir)
}
