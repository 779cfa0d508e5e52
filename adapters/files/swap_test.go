//go:build unix

package files_test

import (
	"bytes"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/files"
	"github.com/ticketbridge/ticketbridge/internal/testutil"
)

const apiKey = "sk_live_Zq7SECRETKEYdoNotLeak0123456789"

// swapFixture is a fixture whose adapter logs into a buffer, and a file
// outside the helpdesk folder that a member of the service's group may not
// read but may point a link at.
type swapFixture struct {
	*fixture
	logs   *testutil.Buffer
	target string
}

func newSwapFixture(t *testing.T, targetContent string) *swapFixture {
	t.Helper()
	f := newFixture(t)
	f.a.Close()
	logs := &testutil.Buffer{}
	a, err := files.New(t.Context(), files.Options{Dir: f.dir,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	f.a = a
	target := filepath.Join(t.TempDir(), "api-key")
	if err := os.WriteFile(target, []byte(targetContent), 0o600); err != nil {
		t.Fatal(err)
	}
	at := f.now.Add(-time.Minute)
	if err := os.Chtimes(target, at, at); err != nil {
		t.Fatal(err)
	}
	return &swapFixture{fixture: f, logs: logs, target: target}
}

// dropDecoy drops a plain outbox file of the target's size and time, as an
// attacker would, so that nothing but the file's identity tells the two
// apart.
func (s *swapFixture) dropDecoy(t *testing.T, name string) string {
	t.Helper()
	info, err := os.Stat(s.target)
	if err != nil {
		t.Fatal(err)
	}
	s.dropAged(t, name, strings.Repeat("x", int(info.Size())), time.Minute)
	return filepath.Join(s.dir, "outbox", name)
}

// swapOnce makes the adapter find a link to the target where it listed the
// file whose path ends in suffix, the first time it opens that file.
func (s *swapFixture) swapOnce(t *testing.T, suffix string) {
	var once sync.Once
	files.SetBeforeOpen(s.a, func(path string) {
		if !strings.HasSuffix(path, suffix) {
			return
		}
		once.Do(func() {
			info, err := os.Stat(path)
			if err != nil {
				t.Errorf("swap %s: %v", path, err)
				return
			}
			if err := os.Remove(path); err != nil {
				t.Errorf("swap %s: %v", path, err)
			}
			if err := os.Symlink(s.target, path); err != nil {
				t.Errorf("swap %s: %v", path, err)
			}
			// The link's target is given the listed file's time, as an
			// attacker can do with a target of their own choosing.
			_ = os.Chtimes(s.target, info.ModTime(), info.ModTime())
		})
	})
}

// assertNowhere fails when text appears in the events, the error, the logs
// or any regular file of the helpdesk folder.
func (s *swapFixture) assertNowhere(t *testing.T, text string, evs []adapters.Event, err error) {
	t.Helper()
	for _, ev := range evs {
		if strings.Contains(ev.Body, text) {
			t.Errorf("event %s carries the link target's content: %q", ev.ID, ev.Body)
		}
	}
	if err != nil && strings.Contains(err.Error(), text) {
		t.Errorf("error carries the link target's content: %v", err)
	}
	if strings.Contains(s.logs.String(), text) {
		t.Errorf("logs carry the link target's content:\n%s", s.logs)
	}
	_ = filepath.WalkDir(s.dir, func(path string, d fs.DirEntry, werr error) error {
		if werr != nil || !d.Type().IsRegular() {
			return nil // a link is not followed: its target is not the folder's content
		}
		b, rerr := os.ReadFile(path)
		if rerr == nil && bytes.Contains(b, []byte(text)) {
			t.Errorf("%s carries the link target's content:\n%s", path, b)
		}
		return nil
	})
}

// TestOutboxSwapForLinkLeaksNoSecret: an outbox file swapped for a link to
// the API key file between the listing and the reading is not read; the
// key appears nowhere, in failed/ least of all.
func TestOutboxSwapForLinkLeaksNoSecret(t *testing.T) {
	s := newSwapFixture(t, apiKey+"\n")
	s.dropDecoy(t, "reply.txt")
	s.swapOnce(t, "/outbox/reply.txt")
	evs, _, err := s.a.Changes(t.Context(), "")
	s.assertNowhere(t, apiKey[:20], evs, err)
	if len(evs) != 0 {
		t.Errorf("events %+v from a link", evs)
	}
}

// TestOutboxSwapForLinkIsNotRead: a link swapped in between the listing and
// the reading is not followed, even to a valid outbox file elsewhere.
func TestOutboxSwapForLinkIsNotRead(t *testing.T) {
	s := newSwapFixture(t, "")
	if err := os.WriteFile(s.target, []byte("ticket: "+string(s.ref)+"\nkind: reply\n\nFROM-THE-LINK\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.dropDecoy(t, "reply.txt")
	s.swapOnce(t, "/outbox/reply.txt")
	evs, _, err := s.a.Changes(t.Context(), "")
	s.assertNowhere(t, "FROM-THE-LINK", evs, err)
}

// TestProcessedSwapForLinkIsNotRead: a processed file swapped for a link
// before it is read again for the report is not followed: its event does
// not take the link target's text, and a secret target is not logged.
func TestProcessedSwapForLinkIsNotRead(t *testing.T) {
	for name, content := range map[string]string{
		"outbox file": "ticket: {ref}\nkind: reply\n\nFROM-THE-LINK\n",
		"api key":     apiKey + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			s := newSwapFixture(t, "")
			content = strings.ReplaceAll(content, "{ref}", string(s.ref))
			if err := os.WriteFile(s.target, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			s.dropAged(t, "good.txt", "ticket: "+string(s.ref)+"\nkind: reply\n\nOn the way.\n", time.Minute)
			s.swapOnce(t, "-good.txt")
			evs, _, err := s.a.Changes(t.Context(), "")
			s.assertNowhere(t, "FROM-THE-LINK", evs, err)
			s.assertNowhere(t, apiKey[:20], evs, err)
		})
	}
}

// TestPeekSwapForLinkIsNotRead: the dry run does not follow a link swapped
// in for an outbox file either.
func TestPeekSwapForLinkIsNotRead(t *testing.T) {
	s := newSwapFixture(t, "")
	if err := os.WriteFile(s.target, []byte("ticket: "+string(s.ref)+"\nkind: reply\n\nFROM-THE-LINK\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.dropDecoy(t, "reply.txt")
	s.swapOnce(t, "/outbox/reply.txt")
	evs, _, err := s.a.PeekChanges(t.Context(), "")
	s.assertNowhere(t, "FROM-THE-LINK", evs, err)
}

// TestTicketJSONLinkIsNotFollowed: a ticket.json replaced by a link is not
// read through it, so nothing of the target reaches thread.md.
func TestTicketJSONLinkIsNotFollowed(t *testing.T) {
	s := newSwapFixture(t, "")
	tj := filepath.Join(s.dir, "tickets", string(s.ref), "ticket.json")
	b, err := os.ReadFile(tj)
	if err != nil {
		t.Fatal(err)
	}
	forged := bytes.Replace(b, []byte("Extra towels for room 214"), []byte("FROM-THE-LINK"), 1)
	if err := os.WriteFile(s.target, forged, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(tj); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(s.target, tj); err != nil {
		t.Fatal(err)
	}
	_, err = s.a.Append(t.Context(), s.ref, []adapters.Message{{UpstreamID: "m9", Body: "hello", AuthorType: "guest", CreatedAt: s.now}})
	if err == nil {
		t.Errorf("Append through a linked ticket.json succeeded")
	}
	s.assertNowhere(t, "FROM-THE-LINK", nil, err)
}

// TestLockFileLinkIsRefused: a link in place of <dir>/.lock is neither
// followed nor used to create a file where it points.
func TestLockFileLinkIsRefused(t *testing.T) {
	dir := t.TempDir()
	elsewhere := filepath.Join(t.TempDir(), "created-through-the-link")
	if err := os.Symlink(elsewhere, filepath.Join(dir, ".lock")); err != nil {
		t.Fatal(err)
	}
	a, err := files.New(t.Context(), files.Options{Dir: dir})
	if err == nil {
		a.Close()
		t.Errorf("New with a link as its lock file succeeded")
	}
	if _, err := os.Lstat(elsewhere); err == nil {
		t.Errorf("the lock file's link was followed: %s was created", elsewhere)
	}
}
