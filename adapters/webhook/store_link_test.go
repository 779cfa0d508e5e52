//go:build unix

package webhook

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// linkTo writes content to a file outside the webhook directory and puts a
// link to it at path, as someone who may write the directory but not read
// the file would.
func linkTo(t *testing.T, path, content string) {
	t.Helper()
	target := filepath.Join(t.TempDir(), "target")
	if err := os.WriteFile(target, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
}

// TestStoreFollowsNoLinks: a link in place of a stored inbound event or a
// ticket record is refused, not read, so an event cannot be forged from a
// file elsewhere and no other file's content reaches an error.
func TestStoreFollowsNoLinks(t *testing.T) {
	dir := t.TempDir()
	s, err := openStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	linkTo(t, filepath.Join(dir, inboundDir, seqName(1)),
		`{"seq": 1, "event": {"id": "e1", "type": "reply", "ticket_id": "T1", "body": "FROM-THE-LINK"}}`)
	evs, err := s.inboundAfter(0, 10)
	for _, ev := range evs {
		if strings.Contains(ev.Event.Body, "FROM-THE-LINK") {
			t.Errorf("inbound event read through a link: %+v", ev)
		}
	}
	if err == nil {
		t.Errorf("inboundAfter with a link in inbound/ gave no error")
	}

	linkTo(t, filepath.Join(dir, ticketsDir, recordName("T1")), `{"upstream_id": "T1", "status": "FROM-THE-LINK"}`)
	rec, ok, err := s.ticket("T1")
	if ok || err == nil || strings.Contains(rec.Status, "FROM-THE-LINK") {
		t.Errorf("ticket record read through a link: %+v, %v, %v", rec, ok, err)
	}
}

// TestStoreErrorsQuoteNothing: a broken stored file is reported by its
// path and the place of the fault, not by its content.
func TestStoreErrorsQuoteNothing(t *testing.T) {
	dir := t.TempDir()
	s, err := openStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	const secret = "sk_live_Zq7SECRETKEY"
	if err := os.WriteFile(filepath.Join(dir, ticketsDir, recordName("T1")), []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err = s.ticket("T1")
	if err == nil || strings.Contains(err.Error(), "'s'") || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("ticket() = %v; want an error naming line 1 and quoting nothing", err)
	}
	if err := os.WriteFile(filepath.Join(dir, inboundDir, seqName(1)), []byte(`{"seq": 1, "event": {"id": `+secret[:5]+`}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = s.inboundAfter(0, 10)
	if err == nil || strings.Contains(err.Error(), "'s'") {
		t.Errorf("inboundAfter() = %v; want an error quoting nothing", err)
	}
}
