package state

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ticketbridge/ticketbridge/internal/testutil"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// openAt opens path with a short lock timeout and a fake clock at t0.
func openAt(t *testing.T, path string, opts Options) *Store {
	t.Helper()
	if opts.Now == nil {
		clk := testutil.NewClock(t0)
		opts.Now = clk.Now
	}
	if opts.LockTimeout == 0 {
		opts.LockTimeout = 20 * time.Millisecond
	}
	s, err := Open(t.Context(), path, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func openTest(t *testing.T, opts Options) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.db")
	return openAt(t, path, opts), path
}

func update(t *testing.T, s *Store, fn func(*Tx) error) {
	t.Helper()
	if err := s.Update(t.Context(), fn); err != nil {
		t.Fatalf("Update: %v", err)
	}
}

func view(t *testing.T, s *Store, fn func(*Tx) error) {
	t.Helper()
	if err := s.View(t.Context(), fn); err != nil {
		t.Fatalf("View: %v", err)
	}
}

// rawPut writes bytes under a key, bypassing every check, as a damaged
// file or a buggy older release would.
func rawPut(t *testing.T, s *Store, bucket, key, val string) {
	t.Helper()
	err := s.be.update(t.Context(), func(kv kvTx) error {
		return kv.put(bucket, []byte(key), []byte(val))
	})
	if err != nil {
		t.Fatalf("raw put %s/%s: %v", bucket, key, err)
	}
}

func TestOpenCreatesFileMode0600(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sub", "dir")
	path := filepath.Join(dir, "state.db")
	s := openAt(t, path, Options{})
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o600 {
		t.Errorf("state file mode = %v, want 0600", got)
	}
	di, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := di.Mode().Perm(); got != 0o700 {
		t.Errorf("state directory mode = %v, want 0700", got)
	}
	if s.Schema() != SchemaVersion || s.Path() != path || s.ReadOnly() {
		t.Errorf("Schema, Path, ReadOnly = %d, %q, %t", s.Schema(), s.Path(), s.ReadOnly())
	}
	var created time.Time
	view(t, s, func(tx *Tx) (err error) { created, err = tx.CreatedAt(); return err })
	if !created.Equal(t0) {
		t.Errorf("CreatedAt = %v, want %v", created, t0)
	}
}

func TestOpenTightensWorldReadableFile(t *testing.T) {
	s, path := openTest(t, Options{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}

	// A read-only open warns but changes nothing.
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	ro := openAt(t, path, Options{ReadOnly: true, Logger: log})
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Errorf("read-only open changed the mode to %v", fi.Mode().Perm())
	}
	if !strings.Contains(logs.String(), "accessible to other users") {
		t.Errorf("read-only open logged %q, want a warning", logs.String())
	}

	logs.Reset()
	openAt(t, path, Options{Logger: log})
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode after a read-write open = %v, want 0600", fi.Mode().Perm())
	}
	if !strings.Contains(logs.String(), "tightened to 0600") {
		t.Errorf("read-write open logged %q, want a warning", logs.String())
	}
}

func TestSecondOpenFailsWithErrLocked(t *testing.T) {
	s, path := openTest(t, Options{})
	for _, ro := range []bool{false, true} {
		_, err := Open(t.Context(), path, Options{ReadOnly: ro, LockTimeout: 10 * time.Millisecond})
		if !errors.Is(err, ErrLocked) {
			t.Fatalf("second Open (read-only %t): err = %v, want ErrLocked", ro, err)
		}
		want := "open state file " + path + ": in use by another ticketbridge process"
		if !strings.HasPrefix(err.Error(), want) {
			t.Errorf("error = %q, want it to start with %q", err, want)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Once released, the file opens again.
	openAt(t, path, Options{})
}

// Read-only stores share the lock with each other.
func TestReadOnlyOpensShareTheFile(t *testing.T) {
	s, path := openTest(t, Options{})
	update(t, s, func(tx *Tx) error { return tx.SetMeta("adapter", "files") })
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	a := openAt(t, path, Options{ReadOnly: true})
	b := openAt(t, path, Options{ReadOnly: true})
	for _, ro := range []*Store{a, b} {
		var v string
		view(t, ro, func(tx *Tx) (err error) { v, _, err = tx.Meta("adapter"); return err })
		if v != "files" {
			t.Errorf("Meta(adapter) = %q", v)
		}
		err := ro.Update(t.Context(), func(*Tx) error { return nil })
		if !errors.Is(err, ErrReadOnly) {
			t.Errorf("Update on a read-only store: err = %v, want ErrReadOnly", err)
		}
	}
	// A read-write open waits for the readers and gives up.
	if _, err := Open(t.Context(), path, Options{LockTimeout: 10 * time.Millisecond}); !errors.Is(err, ErrLocked) {
		t.Errorf("read-write Open beside readers: err = %v, want ErrLocked", err)
	}
}

func TestReadOnlyOpenOfMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "none.db")
	_, err := Open(t.Context(), path, Options{ReadOnly: true})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("err = %v, want fs.ErrNotExist", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("read-only Open created the file")
	}
}

const helperEnv = "TICKETBRIDGE_STATE_TEST_OPEN"

// TestHelperProcessOpen is not a test of its own: TestLockedAcrossProcesses
// runs the test binary again with helperEnv set, and this function then
// opens the file named there and reports what happened on stdout.
func TestHelperProcessOpen(t *testing.T) {
	path := os.Getenv(helperEnv)
	if path == "" {
		t.Skip("helper for TestLockedAcrossProcesses")
	}
	s, err := Open(t.Context(), path, Options{LockTimeout: 50 * time.Millisecond})
	if err != nil {
		os.Stdout.WriteString("OPEN-ERROR " + err.Error() + "\n")
		os.Exit(3)
	}
	_ = s.Close()
	os.Stdout.WriteString("OPEN-OK\n")
	os.Exit(0)
}

func TestLockedAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a subprocess")
	}
	s, path := openTest(t, Options{})
	run := func() (string, int) {
		t.Helper()
		// The deadline only guards against a hang; the lock timeout is 50 ms.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperProcessOpen$", "-test.count=1")
		cmd.Env = append(os.Environ(), helperEnv+"="+path)
		out, err := cmd.Output()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("run helper: %v", err)
		}
		return string(out), cmd.ProcessState.ExitCode()
	}

	out, code := run()
	want := "OPEN-ERROR open state file " + path + ": in use by another ticketbridge process"
	if code != 3 || !strings.Contains(out, want) {
		t.Fatalf("helper while the file is held: exit %d, output %q; want exit 3 and %q", code, out, want)
	}

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if out, code := run(); code != 0 || !strings.Contains(out, "OPEN-OK") {
		t.Fatalf("helper after Close: exit %d, output %q; want OPEN-OK", code, out)
	}
}

func TestOpenRefusesOtherFiles(t *testing.T) {
	dir := t.TempDir()

	text := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(text, bytes.Repeat([]byte("not a database\n"), 1000), 0o600); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(text)
	if _, err := Open(t.Context(), text, Options{}); !errors.Is(err, ErrNotStateFile) {
		t.Errorf("Open(t.Context(), text file): err = %v, want ErrNotStateFile", err)
	}
	if after, _ := os.ReadFile(text); !bytes.Equal(before, after) {
		t.Errorf("Open changed a file that is not a state file")
	}

	other := filepath.Join(dir, "other.db")
	db, err := bolt.Open(other, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(btx *bolt.Tx) error {
		_, err := btx.CreateBucket([]byte("somebody_else"))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	_, err = Open(t.Context(), other, Options{})
	if !errors.Is(err, ErrNotStateFile) || !strings.Contains(err.Error(), `no "meta" bucket`) {
		t.Errorf("Open(t.Context(), other bbolt file): err = %v, want ErrNotStateFile naming the meta bucket", err)
	}

	if _, err := Open(t.Context(), dir, Options{}); err == nil {
		t.Errorf("Open(t.Context(), directory) succeeded")
	}
	if _, err := Open(t.Context(), "", Options{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("Open(t.Context(), \"\"): err = %v, want ErrInvalid", err)
	}
}

func TestCloseTwice(t *testing.T) {
	s, _ := openTest(t, Options{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := s.View(t.Context(), func(*Tx) error { return nil }); err == nil {
		t.Errorf("View after Close succeeded")
	}
}

// An Update whose function fails changes nothing, however much it wrote.
func TestFailedUpdateChangesNothing(t *testing.T) {
	eachBackend(t, func(t *testing.T, b testBackend) {
		s, path := b.openTest(t, Options{})
		seed(t, s)
		snapshot := func() []byte {
			var b bytes.Buffer
			if _, err := s.Backup(context.Background(), &b); err != nil {
				t.Fatal(err)
			}
			return b.Bytes()
		}
		before := dump(t, s)
		beforeBytes := snapshot()

		boom := errors.New("boom")
		err := s.Update(t.Context(), func(tx *Tx) error {
			if err := tx.PutTicket(Ticket{ID: "t9", UpstreamStatus: "new"}); err != nil {
				return err
			}
			if err := tx.PutTicket(Ticket{ID: "t1", UpstreamStatus: "done", LastError: "x"}); err != nil {
				return err
			}
			if err := tx.PutMirrored("t9", "m1", "h1", t0, MessageInfo{}); err != nil {
				return err
			}
			if err := tx.MarkOwn("t1", "m9", "e9", t0, MessageInfo{}); err != nil {
				return err
			}
			if _, err := tx.PutJournal(reply("e9", "t9", "hello")); err != nil {
				return err
			}
			e, _, err := tx.JournalEntry("e1")
			if err != nil {
				return err
			}
			e.State, e.SentAt, e.UpstreamMessageID = Sent, t0, "m5"
			if _, err := tx.PutJournal(e); err != nil {
				return err
			}
			if err := tx.DeleteTicket("t2"); err != nil {
				return err
			}
			if err := tx.SetCursor("changes", "999"); err != nil {
				return err
			}
			if err := tx.SetMeta("adapter", "rt"); err != nil {
				return err
			}
			if err := tx.PutCycle(Cycle{Start: t0, End: t0, Outcome: "ok", Success: true}); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("Update: err = %v, want the function's error", err)
		}
		if after := dump(t, s); after != before {
			t.Errorf("state changed by a failed Update:\nbefore %s\nafter  %s", before, after)
		}
		if b.name == "bbolt" && !bytes.Equal(snapshot(), beforeBytes) {
			t.Errorf("file content changed by a failed Update")
		}
		// And it stays unchanged across a reopen.
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s2 := openAt(t, path, Options{})
		if after := dump(t, s2); after != before {
			t.Errorf("state changed by a failed Update, after reopen:\nbefore %s\nafter  %s", before, after)
		}
	})
}

// A state file whose meta pages fail their checksum is reported as
// damaged, not as some other file.
func TestOpenDamagedFile(t *testing.T) {
	s, path := openTest(t, Options{})
	seed(t, s)
	pageSize := os.Getpagesize()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Each meta page's checksum sits at bytes 72-79 of the page.
	for _, off := range []int64{75, int64(pageSize) + 75} {
		if _, err := f.WriteAt([]byte{0xAA}, off); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = Open(t.Context(), path, Options{})
	if err == nil || !strings.Contains(err.Error(), "the file is damaged") || errors.Is(err, ErrNotStateFile) {
		t.Errorf("err = %v, want a damaged-file error", err)
	}
}
