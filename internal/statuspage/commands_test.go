package statuspage

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/ticketbridge/ticketbridge/internal/testutil"
	"github.com/ticketbridge/ticketbridge/state"
)

// record returns the state's record of ticket id.
func (p *testPage) record(t *testing.T, id string) state.Ticket {
	t.Helper()
	var tk state.Ticket
	if err := p.st.View(t.Context(), func(tx *state.Tx) error {
		var err error
		tk, _, err = tx.Ticket(id)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return tk
}

func TestPauseResumeResyncFromThePage(t *testing.T) { atT0(t, testPauseResumeResyncFromThePage) }

// testPauseResumeResyncFromThePage: signed in, the request's page has
// Pause and Resync; a pause records who, the page then says so and has
// Resume; each command is logged with who; refusals say why.
func testPauseResumeResyncFromThePage(t *testing.T) {
	p := newTestPage(t, testToken)
	first := fmt.Sprintf("%08d-0000-4000-8000-%012d", 0, 0)
	if resp, _ := p.do("POST", "/pause?id="+first, url.Values{}, nil); resp.StatusCode != 403 {
		t.Fatalf("pause before sign-in: %d", resp.StatusCode)
	}
	if resp := p.login("Ines", testToken); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in: %d", resp.StatusCode)
	}
	_, body := p.do("GET", "/tickets/"+first, nil, nil)
	if !strings.Contains(body, "/pause?id="+first) || !strings.Contains(body, "/resync?id="+first) || strings.Contains(body, "/resume?id=") {
		t.Fatalf("signed in, the request's page lacks Pause and Resync:\n%s", body)
	}
	csrf := csrfRE.FindStringSubmatch(body)[1]

	resp, _ := p.do("POST", "/pause?id="+first, url.Values{"csrf": {csrf}}, map[string]string{"Origin": testutil.PipeURL})
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/tickets/"+first) {
		t.Fatalf("pause: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	if tk := p.record(t, first); tk.Paused.IsZero() || tk.PausedBy != "Ines" {
		t.Fatalf("paused record %+v", tk)
	}
	_, body = p.do("GET", "/tickets/"+first+"?done=pause", nil, nil)
	if !strings.Contains(body, "by Ines since") || !strings.Contains(body, "/resume?id="+first) || strings.Contains(body, "/pause?id=") {
		t.Errorf("the paused request's page does not say so, or lacks Resume:\n%s", body)
	}
	if !strings.Contains(body, "The request is paused") {
		t.Errorf("no flash after the pause")
	}

	// Through the console API, as the CLI asks.
	cli := map[string]string{"Authorization": "Bearer " + testToken, "Ticketbridge-Operator": "root"}
	if resp, body := p.do("POST", "/resync?id="+first, url.Values{}, cli); resp.StatusCode != http.StatusConflict || !strings.Contains(body, "resume it") {
		t.Errorf("resync of a paused request: %d %s", resp.StatusCode, body)
	}
	if resp, body := p.do("POST", "/resume?id="+first, url.Values{}, cli); resp.StatusCode != 200 || !strings.HasPrefix(body, "resume: ticket "+first) {
		t.Errorf("resume: %d %s", resp.StatusCode, body)
	}
	if tk := p.record(t, first); !tk.Paused.IsZero() || !tk.ReconcileSoon {
		t.Errorf("resumed record %+v", tk)
	}
	if resp, body := p.do("POST", "/resync?id="+first, url.Values{}, cli); resp.StatusCode != 200 || !strings.HasPrefix(body, "resync: ticket "+first) {
		t.Errorf("resync: %d %s", resp.StatusCode, body)
	}
	if resp, _ := p.do("POST", "/resume?id="+first, url.Values{}, cli); resp.StatusCode != http.StatusConflict {
		t.Errorf("resume of a request not paused: %d", resp.StatusCode)
	}
	if resp, _ := p.do("POST", "/pause?id=no-such-request", url.Values{}, cli); resp.StatusCode != http.StatusNotFound {
		t.Errorf("pause of an unknown request: %d", resp.StatusCode)
	}
	logs := p.logs.String()
	for _, want := range []string{`action=pause who=Ines`, `action=resume who=cli:root`, `action=resync who=cli:root`} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %s:\n%s", want, logs)
		}
	}
}

func TestUnlinkFromThePage(t *testing.T) { atT0(t, testUnlinkFromThePage) }

// testUnlinkFromThePage: signed in, the request's page has Unlink; an
// unlink records who, the page then says so and has no Unlink; a second
// one, through the console API, is refused as a conflict.
func testUnlinkFromThePage(t *testing.T) {
	p := newTestPage(t, testToken)
	first := fmt.Sprintf("%08d-0000-4000-8000-%012d", 0, 0)
	if resp, _ := p.do("POST", "/unlink?id="+first, url.Values{}, nil); resp.StatusCode != 403 {
		t.Fatalf("unlink before sign-in: %d", resp.StatusCode)
	}
	p.login("Ines", testToken)
	_, body := p.do("GET", "/tickets/"+first, nil, nil)
	if !strings.Contains(body, "/unlink?id="+first) {
		t.Fatalf("signed in, the request's page lacks Unlink:\n%s", body)
	}
	csrf := csrfRE.FindStringSubmatch(body)[1]
	resp, _ := p.do("POST", "/unlink?id="+first, url.Values{"csrf": {csrf}}, map[string]string{"Origin": testutil.PipeURL})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("unlink: %d", resp.StatusCode)
	}
	if tk := p.record(t, first); tk.Unlinked.IsZero() || tk.UnlinkedBy != "Ines" {
		t.Fatalf("unlinked record %+v", tk)
	}
	_, body = p.do("GET", "/tickets/"+first+"?done=unlink", nil, nil)
	if !strings.Contains(body, "<th>Unlinked</th><td>by Ines at") || strings.Contains(body, "/unlink?id=") || !strings.Contains(body, "The request is unlinked") {
		t.Errorf("the unlinked request's page does not say so, or still offers Unlink:\n%s", body)
	}
	cli := map[string]string{"Authorization": "Bearer " + testToken, "Ticketbridge-Operator": "root"}
	if resp, body := p.do("POST", "/unlink?id="+first, url.Values{}, cli); resp.StatusCode != http.StatusConflict || !strings.Contains(body, "unlinked by Ines") {
		t.Errorf("unlink of an unlinked request: %d %s", resp.StatusCode, body)
	}
	if !strings.Contains(p.logs.String(), "action=unlink who=Ines") {
		t.Errorf("log lacks the unlink:\n%s", p.logs.String())
	}

	// Unlinked, the page offers Connect; connected back through the
	// console API, as the CLI asks, with the ticket in the form.
	if !strings.Contains(body, "/connect?id="+first) || !strings.Contains(body, `name="ref"`) {
		t.Errorf("the unlinked request's page lacks Connect:\n%s", body)
	}
	ref := p.record(t, first).Ref
	if resp, body := p.do("POST", "/connect?id="+first, url.Values{"ref": {" "}}, cli); resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "no helpdesk ticket named") {
		t.Errorf("connect without a ticket: %d %s", resp.StatusCode, body)
	}
	if resp, body := p.do("POST", "/connect?id="+first, url.Values{"ref": {ref}}, cli); resp.StatusCode != 200 || !strings.HasPrefix(body, "connect: ticket "+first) {
		t.Errorf("connect: %d %s", resp.StatusCode, body)
	}
	if tk := p.record(t, first); !tk.Unlinked.IsZero() || tk.ConnectRef != ref || tk.Ref != ref {
		t.Errorf("connected record %+v, want linked back to %q", tk, ref)
	}
	if !strings.Contains(p.logs.String(), "action=connect who=cli:root") || !strings.Contains(p.logs.String(), "ref="+ref) {
		t.Errorf("log lacks the connect:\n%s", p.logs.String())
	}
}
