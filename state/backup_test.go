package state

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// hookWriter calls hook before its first write.
type hookWriter struct {
	w    io.Writer
	hook func()
}

func (h *hookWriter) Write(p []byte) (int, error) {
	if h.hook != nil {
		h.hook()
		h.hook = nil
	}
	return h.w.Write(p)
}

func noTempFiles(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}

// Backup copies the state as of its start while the store stays open and
// writable.
func TestBackupWhileOpen(t *testing.T) {
	s, _ := openTest(t, Options{})
	seed(t, s)
	before := dump(t, s)

	var buf bytes.Buffer
	done := make(chan error, 1)
	w := &hookWriter{w: &buf, hook: func() {
		// An Update started during the copy must neither wait for it nor
		// end up in it.
		go func() {
			done <- s.Update(t.Context(), func(tx *Tx) error { return tx.SetMeta("during", "backup") })
		}()
	}}
	n, err := s.Backup(context.Background(), w)
	if err != nil {
		t.Fatalf("Backup: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Update during Backup: %v", err)
	}
	if n != int64(buf.Len()) || n == 0 {
		t.Errorf("Backup returned %d, wrote %d bytes", n, buf.Len())
	}

	path := filepath.Join(t.TempDir(), "copy.db")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	cp := openAt(t, path, Options{ReadOnly: true})
	if got := dump(t, cp); got != before {
		t.Errorf("backup differs from the state at its start:\n got %s\nwant %s", got, before)
	}
	view(t, s, func(tx *Tx) error {
		if v, _, _ := tx.Meta("during"); v != "backup" {
			t.Errorf("the Update made during the backup was lost")
		}
		return nil
	})
}

func TestBackupFile(t *testing.T) {
	s, statePath := openTest(t, Options{})
	seed(t, s)
	want := dump(t, s)

	dir := t.TempDir()
	dest := filepath.Join(dir, "state.backup")
	if err := os.WriteFile(dest, []byte("an older backup"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.BackupFile(context.Background(), dest); err != nil {
		t.Fatalf("BackupFile: %v", err)
	}
	fi, err := os.Stat(dest)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("backup mode = %v, want 0600", fi.Mode().Perm())
	}
	noTempFiles(t, dir)
	cp := openAt(t, dest, Options{ReadOnly: true})
	if got := dump(t, cp); got != want {
		t.Errorf("backup file differs:\n got %s\nwant %s", got, want)
	}
	// The store is still open and writable.
	update(t, s, func(tx *Tx) error { return tx.SetMeta("after", "backup") })

	// Refusals: a directory, the state file itself, a cancelled context.
	if err := s.BackupFile(context.Background(), dir); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("BackupFile(dir): err = %v", err)
	}
	if err := s.BackupFile(context.Background(), statePath); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "state file itself") {
		t.Errorf("BackupFile(state file): err = %v", err)
	}
	view(t, s, func(tx *Tx) error {
		if v, _, _ := tx.Meta("after"); v != "backup" {
			t.Errorf("state damaged by a refused backup")
		}
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	other := filepath.Join(dir, "cancelled.backup")
	if err := s.BackupFile(ctx, other); !errors.Is(err, context.Canceled) {
		t.Errorf("BackupFile(cancelled): err = %v, want context.Canceled", err)
	}
	if _, err := os.Stat(other); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a cancelled backup left %s", other)
	}
	noTempFiles(t, dir)
}

// A context cancelled in the middle of a copy stops it.
func TestBackupCancelledMidway(t *testing.T) {
	s, _ := openTest(t, Options{})
	seed(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := t.TempDir()
	err := writeBackup(ctx, s.path, filepath.Join(dir, "b"), func(w io.Writer) error {
		_, err := backup(ctx, s.db, &hookWriter{w: w, hook: cancel})
		return err
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "b")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a cancelled backup left its file")
	}
	noTempFiles(t, dir)
}

func TestOfflineBackupFile(t *testing.T) {
	s, statePath := openTest(t, Options{})
	seed(t, s)
	want := dump(t, s)
	dest := filepath.Join(t.TempDir(), "offline.db")

	// While a store (the daemon) holds the file, the offline copy refuses.
	err := backupFile(context.Background(), statePath, dest, 10*time.Millisecond)
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "stop the daemon") {
		t.Fatalf("backup of a held file: err = %v, want ErrLocked with advice", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := BackupFile(context.Background(), statePath, dest); err != nil {
		t.Fatalf("BackupFile: %v", err)
	}
	cp := openAt(t, dest, Options{ReadOnly: true})
	if got := dump(t, cp); got != want {
		t.Errorf("offline backup differs:\n got %s\nwant %s", got, want)
	}

	// Files of a newer schema are copied too (a copy before a downgrade).
	rawFile(t, statePath, func(btx *bolt.Tx) error {
		return putRaw(btx, bucketMeta, metaSchema, fmt.Sprint(SchemaVersion+1))
	})
	if err := BackupFile(context.Background(), statePath, dest+"2"); err != nil {
		t.Errorf("BackupFile of a newer schema: %v", err)
	}

	if err := BackupFile(context.Background(), filepath.Join(t.TempDir(), "none"), dest); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("BackupFile(missing): err = %v, want fs.ErrNotExist", err)
	}
	notState := filepath.Join(t.TempDir(), "other.db")
	rawFile(t, notState, func(btx *bolt.Tx) error { return putRaw(btx, "x", "k", "v") })
	if err := BackupFile(context.Background(), notState, dest+"3"); !errors.Is(err, ErrNotStateFile) {
		t.Errorf("BackupFile(other bbolt file): err = %v, want ErrNotStateFile", err)
	}
}
