package sync_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/state"
	tbsync "github.com/ticketbridge/ticketbridge/sync"
)

// TestWriteTrail: a request's trail is a table, a line per entry in the
// trail's order, with the operator beside the cause, the ids on both
// sides and the detail on one line; an empty trail says why it may be.
func TestWriteTrail(t *testing.T) {
	at := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	trail := []state.Audit{
		{TicketID: "t-1", At: at, Direction: state.AuditToHelpdesk, Kind: "status", Status: "closed", Outcome: "ok", Cause: state.AuditReconcile},
		{TicketID: "t-1", At: at.Add(time.Minute), Kind: "skip", Outcome: "abandoned", Cause: state.AuditOperator, Operator: "Ines",
			EventID: "ev-1", IdempotencyKey: "key-1", Detail: "answered\n  by phone", Ref: "hd-1"},
	}
	var b strings.Builder
	if err := tbsync.WriteTrail(&b, "t-1", trail); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 || lines[0] != "Audit trail of request t-1 (helpdesk hd-1), oldest first:" {
		t.Fatalf("trail:\n%s", out)
	}
	for i, want := range []string{"WHEN", "status → closed", "skip"} {
		if !strings.Contains(lines[2+i], want) {
			t.Errorf("line %d lacks %q:\n%s", 2+i, want, out)
		}
	}
	if !strings.Contains(lines[4], "operator command (Ines)  event ev-1 key key-1  answered by phone") {
		t.Errorf("the skip's line:\n%s", lines[4])
	}
	b.Reset()
	if err := tbsync.WriteTrail(&b, "t-2", nil); err != nil || !strings.HasPrefix(b.String(), "Nothing in the audit trail of request t-2:") {
		t.Errorf("empty trail: %v %q", err, b.String())
	}

	// JSON lines, one entry each, read back whole.
	b.Reset()
	if err := tbsync.WriteTrailJSON(&b, trail); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(b.String(), "\n"); n != len(trail) {
		t.Errorf("%d JSON lines for %d entries:\n%s", n, len(trail), b.String())
	}
	back, err := tbsync.ReadTrailJSON(strings.NewReader(b.String()))
	if err != nil || !reflect.DeepEqual(back, trail) {
		t.Errorf("read back %+v, %v; want %+v", back, err, trail)
	}
	if _, err := tbsync.ReadTrailJSON(strings.NewReader(`{"ticket_id":`)); err == nil {
		t.Error("a cut answer read without an error")
	}
}
