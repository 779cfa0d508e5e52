package main

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ticketbridge/ticketbridge/state"
)

// TestLogCommand: log ID prints a request's audit trail, oldest first, a
// line per entry, and --json the same as JSON lines; neither holds a
// message's text or the API key. An unknown request is an error, a
// missing ID a usage error.
func TestLogCommand(t *testing.T) {
	b := newBridge(t)
	a := b.ticket("towels")
	if out, errOut, code := b.cmd("once"); code != 0 {
		t.Fatalf("once: exit %d\n%s%s", code, out, errOut)
	}
	const reply = "Fresh towels are on the way."
	b.drop("reply.txt", "ticket: "+b.folder(a)+"\nkind: reply\nauthor: Maria\n\n"+reply+"\n")
	if out, errOut, code := b.cmd("once"); code != 0 {
		t.Fatalf("once: exit %d\n%s%s", code, out, errOut)
	}

	out, errOut, code := b.cmd("log", a[:8])
	if code != 0 {
		t.Fatalf("log: exit %d\n%s%s", code, out, errOut)
	}
	mustContain(t, "log", out, "Audit trail of request "+a, "WHEN DIRECTION WHAT OUTCOME CAUSE IDS DETAIL",
		"to helpdesk ticket ok list change", "to helpdesk message ok list change", "to platform reply ok helpdesk change")
	if i, j := strings.Index(out, "  ticket  "), strings.Index(out, "  reply  "); i < 0 || j < i {
		t.Errorf("log is not oldest first:\n%s", out)
	}

	out, errOut, code = b.cmd("log", a, "--json")
	if code != 0 {
		t.Fatalf("log --json: exit %d\n%s%s", code, out, errOut)
	}
	var kinds []string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var e state.Audit
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("log --json line %q: %v", sc.Text(), err)
		}
		if e.TicketID != a || e.At.IsZero() {
			t.Errorf("entry %+v", e)
		}
		kinds = append(kinds, e.Direction+" "+e.Kind+" "+e.Outcome)
		if e.Kind == "reply" && (e.IdempotencyKey == "" || e.MessageID == "" || e.EventID == "") {
			t.Errorf("the reply's entry lacks its ids: %+v", e)
		}
	}
	if want := "to helpdesk ticket ok,to helpdesk message ok,to platform reply ok"; strings.Join(kinds, ",") != want {
		t.Errorf("log --json: %v, want %s", kinds, want)
	}
	text, _, _ := b.cmd("log", a)
	for _, secret := range []string{reply, "towels", b.ts.Keys.TicketsWrite} {
		if strings.Contains(out+text, secret) {
			t.Errorf("log holds %q", secret)
		}
	}

	if _, errOut, code := b.cmd("log", "no-such-request"); code != 1 || !strings.Contains(errOut, "no tracked ticket") {
		t.Errorf("log of an unknown request: exit %d %s", code, errOut)
	}
	if _, errOut, code := b.cmd("log"); code != 2 || !strings.Contains(errOut, "want the ID of a request") {
		t.Errorf("log without an ID: exit %d %s", code, errOut)
	}
}
