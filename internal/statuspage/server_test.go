package statuspage

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ticketbridge/ticketbridge/internal/testutil"
	"github.com/ticketbridge/ticketbridge/state"
	"github.com/ticketbridge/ticketbridge/sync"
)

var t0 = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

const (
	testToken  = "0123456789abcdef-console-0123456789"
	secretBody = "Dear Mrs Example, your room 512 is ready."
)

// What the state keeps of ticket 0's message m-0-0, a guest's, and of
// m-own, the bridge's post of a staff reply.
var (
	guestWords = state.MessageInfo{AuthorType: "guest", AuthorName: "Mrs Example", WrittenAt: t0.Add(-2 * time.Hour), FirstWords: "Could we have two more pillows in 512…"}
	staffWords = state.MessageInfo{AuthorType: "staff", AuthorName: "Ana Agent", WrittenAt: t0.Add(-time.Hour), FirstWords: "Of course, on their way."}
)

// fixture fills a state file with n tickets; ticket 0 fails, and has a
// refused entry ("ev-refused") and a pending one ("ev-pending"), whose
// texts are secretBody.
func fixture(tb testing.TB, n int) *state.Store {
	tb.Helper()
	st, err := state.Open(tb.Context(), filepath.Join(tb.TempDir(), "state.db"), state.Options{Now: func() time.Time { return t0 }})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	err = st.Update(tb.Context(), func(tx *state.Tx) error {
		for i := range n {
			t := state.Ticket{ID: fmt.Sprintf("%08d-0000-4000-8000-%012d", i, i), Ref: fmt.Sprintf("hd-%d", i),
				Department: fmt.Sprintf("dept-%d", i%40), UpstreamStatus: "in_progress", HelpdeskStatus: "in_progress",
				NextDue: t0.Add(time.Duration(i) * time.Second), DueReason: sync.DueQuiet, LastActivity: t0.Add(-time.Duration(i) * time.Minute)}
			if i == 0 {
				t.LastError, t.Attempts, t.DueReason = "append messages: helpdesk answered 502", 3, sync.DueRetry
			}
			if err := tx.PutTicket(t); err != nil {
				return err
			}
			for j := range 3 {
				var info state.MessageInfo
				if i == 0 && j == 0 {
					info = guestWords
				}
				if err := tx.PutMirrored(t.ID, fmt.Sprintf("m-%d-%d", i, j), fmt.Sprintf("c-%d-%d", i, j), t0, info); err != nil {
					return err
				}
			}
			if i == 0 {
				if err := tx.MarkOwn(t.ID, "m-own", "ev-sent", t0, staffWords); err != nil {
					return err
				}
			}
		}
		first := fmt.Sprintf("%08d-0000-4000-8000-%012d", 0, 0)
		for _, e := range []state.Entry{
			{EventID: "ev-refused", State: state.Failed, LastError: "status \"frozen\" cannot be set through the API"},
			{EventID: "ev-pending", State: state.Pending, Attempts: 2, LastError: "503 unavailable", NextAttempt: t0.Add(time.Hour)},
		} {
			e.TicketID, e.Ref, e.IdempotencyKey, e.Kind = first, "hd-0", "key-"+e.EventID, state.KindReply
			e.Payload = state.Payload{Body: secretBody, AuthorName: "Ana Agent", Visible: true}
			if _, err := tx.PutJournal(e); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return st
}

// testPage is a page served over in-memory connections (see servePage).
type testPage struct {
	t    *testing.T
	s    *Server
	tr   *http.Transport // to the page, without the client's cookie jar
	st   *state.Store
	logs *testutil.Buffer
	hc   *http.Client
}

func newTestPage(t *testing.T, token string) *testPage {
	t.Helper()
	return newTestPageWith(t, token, nil)
}

// newTestPageWith is newTestPage with the options changed by set (its
// proxies, its cookies) before the server is made.
func newTestPageWith(t *testing.T, token string, set func(*Options)) *testPage {
	t.Helper()
	st := fixture(t, 30)
	h := NewHotel("", st)
	r := sync.Report{Start: t0.Add(-time.Minute), Duration: 800 * time.Millisecond, Outcome: sync.OutcomePartial, APIRequests: 7}
	r.Propagation.ToHelpdesk.Observe(4 * time.Second)
	if err := h.CycleDone(r, nil); err != nil {
		t.Fatal(err)
	}
	logs := &testutil.Buffer{}
	opts := Options{Hotels: only(h), One: true, Token: token,
		Logger: slog.New(slog.NewTextHandler(logs, nil))}
	if set != nil {
		set(&opts)
	}
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return servePage(t, s, st, logs)
}

// servePage serves s over in-memory connections (testutil.PipeServer):
// made in a bubble (atT0), the page runs on the bubble's clock.
func servePage(t *testing.T, s *Server, st *state.Store, logs *testutil.Buffer) *testPage {
	t.Helper()
	tr := testutil.PipeServer(t, s)
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &testPage{t: t, s: s, tr: tr, st: st, logs: logs, hc: hc}
}

func (p *testPage) do(method, path string, form url.Values, hdr map[string]string) (*http.Response, string) {
	p.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, testutil.PipeURL+path, body)
	if err != nil {
		p.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := p.hc.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// login signs in as who with token through the sign-in form.
func (p *testPage) login(who, token string) *http.Response {
	p.t.Helper()
	return p.loginWith(who, token, nil)
}

// loginWith is login with the headers hdr on the form's POST.
func (p *testPage) loginWith(who, token string, hdr map[string]string) *http.Response {
	p.t.Helper()
	_, body := p.do("GET", "/login", nil, nil)
	m := csrfRE.FindStringSubmatch(body)
	if m == nil {
		p.t.Fatalf("no CSRF token in the sign-in form:\n%s", body)
	}
	resp, _ := p.do("POST", "/login", url.Values{"name": {who}, "token": {token}, "csrf": {m[1]}}, hdr)
	return resp
}

func (p *testPage) entry(id string) state.Entry {
	p.t.Helper()
	var e state.Entry
	if err := p.st.View(p.t.Context(), func(tx *state.Tx) error {
		var err error
		e, _, err = tx.JournalEntry(id)
		return err
	}); err != nil {
		p.t.Fatal(err)
	}
	return e
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

func TestReadOnlyPage(t *testing.T) { atT0(t, testReadOnlyPage) }

func testReadOnlyPage(t *testing.T) {
	p := newTestPage(t, "")
	first := fmt.Sprintf("%08d-0000-4000-8000-%012d", 0, 0)
	for _, path := range []string{"/", "/tickets", "/tickets?q=dept-3&errors=1", "/tickets/" + first, "/tickets/hd-5"} {
		resp, body := p.do("GET", path, nil, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d\n%s", path, resp.StatusCode, body)
		}
		h := resp.Header
		if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") || strings.Contains(csp, "script-src") || strings.Contains(csp, "unsafe-inline") {
			t.Errorf("GET %s: CSP %q", path, csp)
		}
		if h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: no nosniff", path)
		}
		for _, bad := range []string{secretBody, "Ana Agent", "<script", "Retry</button>", "csrf", guestWords.FirstWords, guestWords.AuthorName, staffWords.FirstWords} {
			if strings.Contains(body, bad) {
				t.Errorf("GET %s shows %q without sign-in", path, bad)
			}
		}
	}
	_, body := p.do("GET", "/", nil, nil)
	for _, want := range []string{"append messages: helpdesk answered 502", "ev-refused", "cannot be set through the API", "ev-pending", "<svg", "Read-only"} {
		if !strings.Contains(body, want) {
			t.Errorf("overview lacks %q", want)
		}
	}
	if resp, _ := p.do("GET", "/login", nil, nil); resp.StatusCode != 404 {
		t.Errorf("GET /login without a token: %d", resp.StatusCode)
	}
	if resp, _ := p.do("POST", "/retry?id=ev-refused", url.Values{}, map[string]string{"Authorization": "Bearer " + testToken}); resp.StatusCode != 403 {
		t.Errorf("POST /retry without a token configured: %d", resp.StatusCode)
	}
	if e := p.entry("ev-refused"); e.State != state.Failed {
		t.Fatalf("entry changed on a read-only page: %+v", e)
	}
	if _, body := p.do("GET", "/tickets?q=dept-3", nil, nil); strings.Count(body, `href="/tickets/0000`) != 1 {
		t.Errorf("search for dept-3 found %d requests, want 1", strings.Count(body, `href="/tickets/0000`))
	}
}

func TestSignInAndActions(t *testing.T) { atT0(t, testSignInAndActions) }

func testSignInAndActions(t *testing.T) {
	p := newTestPage(t, testToken)
	first := fmt.Sprintf("%08d-0000-4000-8000-%012d", 0, 0)

	// Before sign-in: no action, no text.
	if resp, _ := p.do("POST", "/retry?id=ev-refused", url.Values{}, nil); resp.StatusCode != 403 {
		t.Fatalf("retry before sign-in: %d", resp.StatusCode)
	}
	if resp, _ := p.do("POST", "/login", url.Values{"name": {"Ines"}, "token": {testToken}}, nil); resp.StatusCode != 403 {
		t.Fatalf("sign-in without the form's CSRF token: %d", resp.StatusCode)
	}
	if resp := p.login("Ines", "wrong-token-wrong-token"); resp.StatusCode != 403 {
		t.Fatalf("sign-in with a wrong token: %d", resp.StatusCode)
	}
	resp := p.login("Ines", testToken)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in: %d", resp.StatusCode)
	}
	sc := resp.Header.Get("Set-Cookie")
	if !strings.Contains(sc, "HttpOnly") || !strings.Contains(sc, "SameSite=Strict") || strings.Contains(sc, testToken) {
		t.Fatalf("session cookie %q", sc)
	}

	_, body := p.do("GET", "/tickets/"+first, nil, nil)
	if !strings.Contains(body, secretBody) || !strings.Contains(body, "Ines") {
		t.Fatalf("signed in, the request page lacks the text or the user:\n%s", body)
	}
	m := csrfRE.FindStringSubmatch(body)
	if m == nil {
		t.Fatal("no CSRF token in the forms")
	}
	csrf := m[1]

	// A form without the CSRF token, or from another site, is refused.
	if resp, _ := p.do("POST", "/retry?id=ev-refused", url.Values{}, nil); resp.StatusCode != 403 {
		t.Fatalf("retry without CSRF token: %d", resp.StatusCode)
	}
	if resp, _ := p.do("POST", "/retry?id=ev-refused", url.Values{"csrf": {csrf}}, map[string]string{"Origin": "http://evil.example"}); resp.StatusCode != 403 {
		t.Fatalf("retry from another origin: %d", resp.StatusCode)
	}
	if e := p.entry("ev-refused"); e.State != state.Failed {
		t.Fatalf("a refused form changed the entry: %+v", e)
	}

	resp, _ = p.do("POST", "/retry?id=ev-refused", url.Values{"csrf": {csrf}}, map[string]string{"Origin": testutil.PipeURL})
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/tickets/"+first) {
		t.Fatalf("retry: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	if e := p.entry("ev-refused"); e.State != state.Pending || e.IdempotencyKey != "key-ev-refused" || !e.NextAttempt.Equal(t0) {
		t.Fatalf("retried entry %+v", e)
	}
	resp, body = p.do("POST", "/skip?id=ev-pending", url.Values{"csrf": {csrf}, "reason": {"answered by phone"}}, nil)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("skip: %d %s", resp.StatusCode, body)
	}
	if e := p.entry("ev-pending"); e.State != state.Abandoned || e.LastError != "abandoned by Ines: answered by phone" {
		t.Fatalf("skipped entry %+v", e)
	}
	if resp, body := p.do("POST", "/skip?id=ev-refused", url.Values{"csrf": {csrf}}, nil); resp.StatusCode != 400 || !strings.Contains(body, "reason is required") {
		t.Errorf("skip without a reason: %d %s", resp.StatusCode, body)
	}
	if resp, _ := p.do("POST", "/read-now?id="+first, url.Values{"csrf": {csrf}}, nil); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("read now: %d", resp.StatusCode)
	}
	// The request's audit trail names each action and the signed-in
	// user who took it.
	_, body = p.do("GET", "/tickets/"+first, nil, nil)
	trail := body[strings.Index(body, `id="audit"`):]
	for _, want := range []string{"<td>retry</td><td>ok</td><td>operator command (Ines)</td>", "<td>skip</td><td>abandoned</td><td>operator command (Ines)</td>",
		"<td>read now</td><td>ok</td><td>operator command (Ines)</td>", "key key-ev-refused", "answered by phone"} {
		if !strings.Contains(trail, want) {
			t.Errorf("the request's trail lacks %s:\n%s", want, trail)
		}
	}
	// The snapshot shows the actions before the next cycle.
	_, body = p.do("GET", "/", nil, nil)
	if strings.Contains(body, "ev-pending") || !strings.Contains(body, "ev-refused") {
		t.Errorf("overview after retry and skip does not show them")
	}
	logs := p.logs.String()
	for _, want := range []string{`action=retry who=Ines`, `action=skip who=Ines`, `reason="answered by phone"`, `action="read now" who=Ines`} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %s:\n%s", want, logs)
		}
	}
	if strings.Contains(logs, testToken) || strings.Contains(logs, secretBody) {
		t.Errorf("the log holds the token or a message text:\n%s", logs)
	}
}

func TestBearerActions(t *testing.T) { atT0(t, testBearerActions) }

func testBearerActions(t *testing.T) {
	p := newTestPage(t, testToken)
	bad := map[string]string{"Authorization": "Bearer " + testToken + "x"}
	if resp, _ := p.do("POST", "/skip?id=ev-pending", url.Values{"reason": {"x"}}, bad); resp.StatusCode != 403 {
		t.Fatalf("skip with a wrong bearer token: %d", resp.StatusCode)
	}
	good := map[string]string{"Authorization": "Bearer " + testToken, "Ticketbridge-Operator": "root"}
	resp, body := p.do("POST", "/skip?id=ev-pending", url.Values{"reason": {"duplicate of a phone call"}}, good)
	if resp.StatusCode != 200 || !strings.Contains(body, "skip: entry ev-pending") {
		t.Fatalf("skip with the token: %d %s", resp.StatusCode, body)
	}
	if e := p.entry("ev-pending"); e.State != state.Abandoned || !strings.Contains(e.LastError, "cli:root") {
		t.Fatalf("skipped entry %+v", e)
	}
	if resp, body := p.do("POST", "/retry?id=no-such-thing", url.Values{}, good); resp.StatusCode != 404 || !strings.Contains(body, "no-such-thing") {
		t.Errorf("retry of an unknown id: %d %s", resp.StatusCode, body)
	}
	// retry of a ticket id reads the ticket now.
	first := fmt.Sprintf("%08d-0000-4000-8000-%012d", 0, 0)
	if resp, body := p.do("POST", "/retry?id="+first, url.Values{}, good); resp.StatusCode != 200 || !strings.HasPrefix(body, "read now: ticket") {
		t.Errorf("retry of a ticket id: %d %s", resp.StatusCode, body)
	}
	if resp, _ := p.do("POST", "/skip?id=ev-refused", url.Values{"reason": {strings.Repeat("é", 400)}}, good); resp.StatusCode != 413 {
		t.Errorf("skip with a body over the limit: %d", resp.StatusCode)
	}
	// A sign-in form over the limit too, though the limiter read it first
	// to see its token.
	if resp, _ := p.do("POST", "/login", url.Values{"name": {"Ines"}, "token": {testToken}, "pad": {strings.Repeat("x", FormMax)}}, nil); resp.StatusCode != 413 {
		t.Errorf("sign-in with a body over the limit: %d", resp.StatusCode)
	}
}

// TestSignInPausesAfterFailures runs in a bubble: the failures are
// counted on its clock, which stands still while it runs.
func TestSignInPausesAfterFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, _ := guessingPage(t)
		const client = "192.0.2.1:4000"
		for range loginFails {
			p.signIn(client, "", "nope-nope-nope-nope")
		}
		if code, _ := p.signIn(client, "", "nope-nope-nope-nope"); code != http.StatusTooManyRequests {
			t.Fatalf("a wrong sign-in after %d failures: %d, want 429", loginFails, code)
		}
		if code, _ := p.signIn(client, "", testToken); code != http.StatusSeeOther {
			t.Fatalf("the right sign-in after %d failures: %d, want 303", loginFails, code)
		}
	})
}

func TestCheckToken(t *testing.T) {
	short := strings.Repeat("a", MinTokenLen-1)
	for _, c := range []struct{ tok, want string }{
		{"", "is empty"}, {short, "is 31 bytes long; want 32 or more"}, {"two words here and more, and more words", "white space"},
	} {
		if err := CheckToken(c.tok); err == nil || !strings.Contains(err.Error(), c.want) || (c.tok != "" && strings.Contains(err.Error(), c.tok)) {
			t.Errorf("CheckToken(%q) = %v, want an error with %q and without the token", c.tok, err, c.want)
		}
	}
	if err := CheckToken(testToken); err != nil {
		t.Errorf("CheckToken(%d bytes) = %v", len(testToken), err)
	}
	if err := CheckToken("0123456789abcdef0123456789abcdef"); err != nil {
		t.Errorf("CheckToken(%d bytes) = %v", MinTokenLen, err)
	}
}

// TestCheckTokenWantsVariety: the right token is never refused, so a
// token's guessability is its only defence: one of few characters
// repeated ("aaaa…", a word written over and over) is refused however long.
func TestCheckTokenWantsVariety(t *testing.T) {
	for _, tok := range []string{strings.Repeat("a", 64), strings.Repeat("hotel", 8), strings.Repeat("seaside1", 5)} {
		if err := CheckToken(tok); err == nil || !strings.Contains(err.Error(), "different characters") || strings.Contains(err.Error(), tok) {
			t.Errorf("CheckToken(%d bytes of few characters) = %v, want a refusal naming the fix and not the token", len(tok), err)
		}
	}
}

func TestOverviewActionsWhenSignedIn(t *testing.T) { atT0(t, testOverviewActionsWhenSignedIn) }

func testOverviewActionsWhenSignedIn(t *testing.T) {
	p := newTestPage(t, testToken)
	p.login("Ines", testToken)
	_, body := p.do("GET", "/", nil, nil)
	if !strings.Contains(body, `action="/retry?id=ev-refused"`) || !strings.Contains(body, `action="/skip?id=ev-refused"`) {
		t.Errorf("signed in, the overview offers no retry or skip of the refused entry")
	}
	// A request found by its helpdesk reference.
	if resp, body := p.do("GET", "/tickets/hd-7", nil, nil); resp.StatusCode != 200 || !strings.Contains(body, fmt.Sprintf("%08d-0000", 7)) {
		t.Errorf("GET /tickets/hd-7: %d", resp.StatusCode)
	}
}

// TestHotelKeepsAnHourOfCycles: the source keeps the cycles of the last
// hour, and an action shows in its snapshot before the next cycle.
func TestHotelKeepsAnHourOfCycles(t *testing.T) { atT0(t, testHotelKeepsAnHourOfCycles) }

func testHotelKeepsAnHourOfCycles(t *testing.T) {
	st := fixture(t, 3)
	now := time.Now() // t0
	h := NewHotel("", st)
	for i := range 130 {
		if i > 0 {
			time.Sleep(time.Minute)
		}
		now = time.Now()
		if err := h.CycleDone(sync.Report{Start: now, Outcome: sync.OutcomeOK}, nil); err != nil {
			t.Fatal(err)
		}
	}
	cs := h.Snapshot().Cycles
	if len(cs) != 61 || !cs[0].Start.Equal(now.Add(-time.Hour)) {
		t.Fatalf("kept %d cycles from %s; want 61 from %s", len(cs), cs[0].Start, now.Add(-time.Hour))
	}
	// A restarted daemon starts from the cycle stored in state.
	if err := st.Update(t.Context(), func(tx *state.Tx) error {
		return tx.PutCycle(state.Cycle{Start: now, End: now, Outcome: "ok", Report: []byte(`{"start":"` + now.Format(time.RFC3339) + `","outcome":"ok","api_requests":3}`)})
	}); err != nil {
		t.Fatal(err)
	}
	fresh := NewHotel("", st)
	if err := fresh.Refresh(); err != nil {
		t.Fatal(err)
	}
	if cs := fresh.Snapshot().Cycles; len(cs) != 1 || cs[0].APIRequests != 3 {
		t.Errorf("after a restart: cycles %+v, want the stored one", cs)
	}
	before := h.Snapshot()
	if _, err := h.Retry("ev-refused", "ops"); err != nil {
		t.Fatal(err)
	}
	after := h.Snapshot().Status
	if len(after.Failed) != 0 || len(after.Pending) != 2 || len(before.Status.Failed) != 1 {
		t.Errorf("after retry: failed %d pending %d; the earlier snapshot has %d failed", len(after.Failed), len(after.Pending), len(before.Status.Failed))
	}
}

// getOK has h serve GET path and returns the body, failing t unless the
// answer is 200.
func getOK(t *testing.T, h http.Handler, path string) string {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1:9464"+path, nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET %s: %d", path, rec.Code)
	}
	return rec.Body.String()
}

// atT0 runs f in a testing/synctest bubble whose clock is first moved to
// t0: the pages say how long ago and how soon on the runtime's clock.
func atT0(t *testing.T, f func(t *testing.T)) {
	synctest.Test(t, func(t *testing.T) {
		time.Sleep(time.Until(t0))
		f(t)
	})
}
