package statuspage

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/internal/testutil"
	"github.com/ticketbridge/ticketbridge/state"
	"github.com/ticketbridge/ticketbridge/sync"
)

func TestRequestPageShowsLinkFieldsAndAgreedStatus(t *testing.T) {
	atT0(t, testRequestPageShowsLinkFieldsAndAgreedStatus)
}

// testRequestPageShowsLinkFieldsAndAgreedStatus: a request's page links
// its helpdesk ticket (escaped, as a URL), shows the agreed status and
// the fields last carried, each row, with those whose outcome is
// unknown; the description and comment only to a signed-in user. A
// request never carried says so, and a helpdesk without a web UI links
// nothing.
func testRequestPageShowsLinkFieldsAndAgreedStatus(t *testing.T) {
	st := fixture(t, 3)
	first, second := fmt.Sprintf("%08d-0000-4000-8000-%012d", 0, 0), fmt.Sprintf("%08d-0000-4000-8000-%012d", 1, 1)
	err := st.Update(t.Context(), func(tx *state.Tx) error {
		tk, _, err := tx.Ticket(first)
		if err != nil {
			return err
		}
		tk.AgreedStatus, tk.ReconciledAt, tk.LastReconcile = "in_progress", t0.Add(-time.Minute), sync.ReconcileInSync
		tk.Carried = state.Fields{At: t0.Add(-2 * time.Minute), Department: "spa", Title: "Late check-out <please>", Due: t0.Add(3 * time.Hour),
			Rated: true, Rating: 4.5, Comment: "VIP: greet by name", Priority: "high", Unsure: 1 << 2} // the due date's
		return tx.PutTicket(tk)
	})
	if err != nil {
		t.Fatal(err)
	}
	h := NewHotel("", st).WithTicketURL(func(ref string) string {
		if ref == "hd-1" {
			return "javascript:alert(1)" // never a live link
		}
		return "https://rt.example/rt/Ticket/Display.html?id=" + ref + "&x=\"<b>"
	})
	if err := h.CycleDone(sync.Report{Start: t0.Add(-time.Minute), Outcome: sync.OutcomeOK}, nil); err != nil {
		t.Fatal(err)
	}
	logs := &testutil.Buffer{}
	s, err := New(Options{Hotels: only(h), One: true, Token: testToken, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	p := servePage(t, s, st, logs)

	rows := []string{
		`<a href="https://rt.example/rt/Ticket/Display.html?id=hd-0&amp;x=%22%3cb%3e" target="_blank" rel="noopener noreferrer">open in the helpdesk</a>`,
		`<th>Agreed status</th><td>in_progress: the status both sides last agreed on`,
		"last reconciled " + t0.Add(-time.Minute).Local().Format(time.DateTime) + ": " + sync.ReconcileInSync,
		`<h2 id="fields">Fields last carried to the helpdesk</h2>`,
		"<th>Carried</th><td>" + t0.Add(-2*time.Minute).Local().Format(time.DateTime) + "</td>",
		"<th>Department</th><td>spa</td>",
		"<th>Due date</th><td>" + t0.Add(3*time.Hour).Local().Format(time.DateTime) + ` <span class="error">outcome unknown`,
		"<th>Rating</th><td>4.5</td>",
		"<th>Priority</th><td>high</td>",
	}
	texts := []string{`<th>Description</th><td class="text">Late check-out &lt;please&gt;</td>`, `<th>Comment</th><td class="text">VIP: greet by name</td>`}
	hidden := []string{`<th>Description</th><td class="note">shown to signed-in users only</td>`, `<th>Comment</th><td class="note">shown to signed-in users only</td>`}
	check := func(signedIn bool) {
		t.Helper()
		resp, body := p.do("GET", "/tickets/"+first, nil, nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("request's page: %d", resp.StatusCode)
		}
		want, not := append(append([]string{}, rows...), hidden...), texts
		if signedIn {
			want, not = append(append([]string{}, rows...), texts...), hidden
		}
		for _, w := range want {
			if !strings.Contains(body, w) {
				t.Errorf("signed in %v: the page lacks %q", signedIn, w)
			}
		}
		for _, n := range not {
			if strings.Contains(body, n) {
				t.Errorf("signed in %v: the page shows %q", signedIn, n)
			}
		}
		if !signedIn && (strings.Contains(body, "Late check-out") || strings.Contains(body, "greet by name")) {
			t.Errorf("signed out, the page shows the request's texts")
		}
		if n := strings.Count(body, "outcome unknown"); n != 1 {
			t.Errorf("signed in %v: %d fields marked unknown, want the due date alone", signedIn, n)
		}
		if t.Failed() {
			t.Logf("page:\n%s", body)
		}
	}
	check(false)
	if resp := p.login("Ines", testToken); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in: %d", resp.StatusCode)
	}
	check(true)

	// Never carried, never reconciled, and an address that is no web
	// page's.
	_, body := p.do("GET", "/tickets/"+second, nil, nil)
	for _, w := range []string{"No fields are recorded as carried", "<th>Agreed status</th><td>– (none recorded yet"} {
		if !strings.Contains(body, w) {
			t.Errorf("a request never carried: the page lacks %q", w)
		}
	}
	if strings.Contains(body, "javascript:") || strings.Contains(body, "last reconciled") {
		t.Errorf("a request never reconciled, linked to a script:\n%s", body)
	}
}
