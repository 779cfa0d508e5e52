package statuspage

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/internal/testutil"
	"github.com/ticketbridge/ticketbridge/state"
	"github.com/ticketbridge/ticketbridge/sync"
)

// fleetPage is the page of a daemon of three hotels: alpha (ready, 120
// requests: two pages of the table), "beta two" (not ready) and gamma
// (its configuration is wrong). alpha and "beta two" have the same
// fixture, so the same entry ids: an action must reach its hotel only.
type fleetPage struct {
	*testPage
	alpha, beta *state.Store
}

func newFleetPage(t *testing.T, token string) *fleetPage {
	t.Helper()
	alpha, beta := fixture(t, 120), fixture(t, 3)
	ha := NewHotel("alpha", alpha)
	hb := NewHotel("beta two", beta)
	for _, h := range []*Hotel{ha, hb} {
		if err := h.CycleDone(sync.Report{Start: t0.Add(-time.Minute), Duration: time.Second, Outcome: sync.OutcomeOK}, nil); err != nil {
			t.Fatal(err)
		}
	}
	list := func() []Listed {
		return []Listed{
			{Name: "alpha", Source: ha, Ready: true, Reason: "ok: last cycle ok"},
			{Name: "beta two", Source: hb, Reason: "the last cycle failed: key refused"},
			{Name: "gamma", Reason: "failed to start: TICKETBRIDGE_ADAPTER: no adapter \"nope\""},
		}
	}
	logs := &testutil.Buffer{}
	s, err := New(Options{Hotels: list, Token: token, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return &fleetPage{testPage: servePage(t, s, alpha, logs), alpha: alpha, beta: beta}
}

func entryOf(t *testing.T, st *state.Store, id string) state.Entry {
	t.Helper()
	var e state.Entry
	if err := st.View(t.Context(), func(tx *state.Tx) error {
		var err error
		e, _, err = tx.JournalEntry(id)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return e
}

var linkRE = regexp.MustCompile(`(?:href|action)="([^"]*)"`)

// shared are the links of every page that belong to no hotel.
var shared = map[string]bool{"/": true, "/login": true, "/logout": true, "/assets/style.css": true, "/metrics": true}

func TestNewWantsHotels(t *testing.T) {
	for _, o := range []Options{{}, {One: true}} {
		if _, err := New(o); err == nil || !strings.Contains(err.Error(), "Hotels") {
			t.Errorf("New without Hotels (One %t): %v", o.One, err)
		}
	}
}

// only lists src as the one hotel of a daemon of one hotel (Options.One).
func only(src Source) func() []Listed {
	return func() []Listed { return []Listed{{Name: "default", Source: src, Ready: true}} }
}

// TestOneHotelNotRunning: a daemon of one hotel whose hotel does not run
// (it stands by, or is starting) answers its pages with why, at the one
// hotel's paths.
func TestOneHotelNotRunning(t *testing.T) {
	s, err := New(Options{One: true, Hotels: func() []Listed {
		return []Listed{{Name: "default", Ready: true, Reason: "not synced here: synced by replica b"}}
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/", "/tickets"} {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest("GET", "http://localhost"+path, nil))
		if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "synced by replica b") {
			t.Errorf("GET %s while the hotel stands by: %d\n%s", path, rec.Code, rec.Body.String())
		}
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("GET", "http://localhost/hotels/default/", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("GET /hotels/default/ of a daemon of one hotel: %d, want 404", rec.Code)
	}
}

func TestHotelList(t *testing.T) { atT0(t, testHotelList) }

func testHotelList(t *testing.T) {
	p := newFleetPage(t, "")
	resp, body := p.do("GET", "/", nil, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("GET /: %d\n%s", resp.StatusCode, body)
	}
	// Not ready first, by name; then the ready ones.
	b, g, a := strings.Index(body, "beta two"), strings.Index(body, `<td class="nowrap">gamma</td>`), strings.Index(body, `href="/hotels/alpha/"`)
	if b < 0 || g < 0 || a < 0 || !(b < g && g < a) {
		t.Errorf("rows not in the order beta two, gamma, alpha (%d %d %d):\n%s", b, g, a, body)
	}
	for _, want := range []string{`href="/hotels/beta%20two/"`, "key refused", `no adapter &#34;nope&#34;`, "2 not ready", `href="/hotels/alpha/tickets?errors=1"`, "no status page now"} {
		if !strings.Contains(body, want) {
			t.Errorf("the list lacks %s:\n%s", want, body)
		}
	}
	if strings.Contains(body, `href="/hotels/gamma/"`) {
		t.Error("the list links the page of a hotel that does not run")
	}
	// alpha's row: 120 tracked, 1 failing, 1 pending, 1 refused.
	row := body[a:]
	row = row[:strings.Index(row, "</tr>")]
	for _, want := range []string{"<td>120</td>", ">1</a></td><td>1</td><td>1</td>", "ok</span>, 1m0s ago"} {
		if !strings.Contains(row, want) {
			t.Errorf("alpha's row lacks %s: %s", want, row)
		}
	}
}

// TestHotelPagesStayUnderTheirPrefix: every link and form of a hotel's
// pages, signed in, leads to that hotel's pages or to a shared path.
func TestHotelPagesStayUnderTheirPrefix(t *testing.T) { atT0(t, testHotelPagesStayUnderTheirPrefix) }

func testHotelPagesStayUnderTheirPrefix(t *testing.T) {
	p := newFleetPage(t, testToken)
	if resp := p.login("Ines", testToken); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/?done=login" {
		t.Fatalf("sign-in: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	first := fmt.Sprintf("%08d-0000-4000-8000-%012d", 0, 0)
	for hotel, base := range map[string]string{"alpha": "/hotels/alpha", "beta two": "/hotels/beta%20two"} {
		for _, path := range []string{"/", "/tickets", "/tickets?errors=1", "/tickets/" + first, "/tickets/hd-1", "/tickets/no-such-request"} {
			resp, body := p.do("GET", base+path, nil, nil)
			wantCode := 200
			if path == "/tickets/no-such-request" {
				wantCode = 404
			}
			if resp.StatusCode != wantCode {
				t.Fatalf("GET %s%s: %d\n%s", base, path, resp.StatusCode, body)
			}
			if !strings.Contains(body, "ticketbridge · "+hotel) {
				t.Errorf("GET %s%s does not name the hotel %s", base, path, hotel)
			}
			links := linkRE.FindAllStringSubmatch(body, -1)
			if len(links) < 6 {
				t.Errorf("GET %s%s: only %d links", base, path, len(links))
			}
			for _, l := range links {
				if !strings.HasPrefix(l[1], base+"/") && !shared[l[1]] {
					t.Errorf("GET %s%s links %s, outside %s/", base, path, l[1], base)
				}
			}
		}
	}
	_, body := p.do("GET", "/hotels/alpha/tickets", nil, nil)
	if !strings.Contains(body, `href="/hotels/alpha/tickets?page=2" rel="next"`) {
		t.Errorf("alpha's table does not page under its prefix:\n%s", body)
	}
	_, body = p.do("GET", "/hotels/alpha/", nil, nil)
	for _, want := range []string{`action="/hotels/alpha/retry?id=ev-refused"`, `action="/hotels/alpha/skip?id=ev-refused"`, `href="/hotels/alpha/tickets/` + first + `"`, `<a href="/" aria-current="page">Hotels</a>` + "\n"} {
		if strings.Contains(want, "aria-current") {
			if strings.Contains(body, want) {
				t.Error("the Hotels link is marked current on a hotel's page")
			}
			continue
		}
		if !strings.Contains(body, want) {
			t.Errorf("alpha's page lacks %s", want)
		}
	}
	if resp, _ := p.do("GET", "/hotels/alpha", nil, nil); resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != "/hotels/alpha/" {
		t.Errorf("GET /hotels/alpha: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
}

func TestUnknownHotel(t *testing.T) { atT0(t, testUnknownHotel) }

func testUnknownHotel(t *testing.T) {
	p := newFleetPage(t, testToken)
	bearer := map[string]string{"Authorization": "Bearer " + testToken}
	for _, c := range []struct {
		method, path string
		code         int
		want         string
	}{
		{"GET", "/hotels/nope/", 404, `No hotel named &#34;nope&#34; in this daemon&#39;s hotels directory (hotels: alpha, beta two, gamma)`},
		{"GET", "/hotels/nope/tickets", 404, "No hotel named"},
		{"POST", "/hotels/nope/retry?id=ev-refused", 404, `No hotel named "nope"`},
		{"GET", "/hotels/gamma/", 503, "Hotel gamma has no status page now: failed to start"},
		{"POST", "/hotels/gamma/skip?id=ev-refused", 503, "Hotel gamma has no status page now"},
		{"GET", "/tickets", 404, ""},     // the one-hotel paths are not the fleet's
		{"POST", "/retry?id=x", 404, ""}, // nor its actions
	} {
		var form url.Values
		if c.method == "POST" {
			form = url.Values{"reason": {"x"}}
		}
		var hdr map[string]string // a browser's GET, the CLI's POST
		if c.method == "POST" {
			hdr = bearer
		}
		resp, body := p.do(c.method, c.path, form, hdr)
		if resp.StatusCode != c.code || !strings.Contains(body, c.want) {
			t.Errorf("%s %s: %d, want %d with %q:\n%s", c.method, c.path, resp.StatusCode, c.code, c.want, body)
		}
	}
	for _, st := range []*state.Store{p.alpha, p.beta} {
		if e := entryOf(t, st, "ev-refused"); e.State != state.Failed {
			t.Errorf("an action on no hotel changed an entry: %+v", e)
		}
	}
}

// TestHotelActionsReachTheirHotel: the two hotels have entries of the
// same ids; an action on one changes that hotel's state only.
func TestHotelActionsReachTheirHotel(t *testing.T) { atT0(t, testHotelActionsReachTheirHotel) }

func testHotelActionsReachTheirHotel(t *testing.T) {
	p := newFleetPage(t, testToken)
	good := map[string]string{"Authorization": "Bearer " + testToken, "Ticketbridge-Operator": "root"}
	resp, body := p.do("POST", "/hotels/beta%20two/retry?id=ev-refused", url.Values{}, good)
	if resp.StatusCode != 200 || !strings.Contains(body, "retry: entry ev-refused") {
		t.Fatalf("retry on beta two: %d %s", resp.StatusCode, body)
	}
	if e := entryOf(t, p.beta, "ev-refused"); e.State != state.Pending {
		t.Errorf("beta two's entry after its retry: %+v", e)
	}
	if e := entryOf(t, p.alpha, "ev-refused"); e.State != state.Failed {
		t.Errorf("a retry on beta two changed alpha's entry: %+v", e)
	}

	// A signed-in form on alpha, redirected back to alpha's pages.
	if resp := p.login("Ines", testToken); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in: %d", resp.StatusCode)
	}
	_, body = p.do("GET", "/hotels/alpha/", nil, nil)
	m := csrfRE.FindStringSubmatch(body)
	if m == nil {
		t.Fatal("no CSRF token on alpha's page")
	}
	resp, body = p.do("POST", "/hotels/alpha/skip?id=ev-pending", url.Values{"csrf": {m[1]}, "reason": {"answered by phone"}}, map[string]string{"Origin": testutil.PipeURL})
	first := fmt.Sprintf("%08d-0000-4000-8000-%012d", 0, 0)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/hotels/alpha/tickets/"+first+"?done=skip" {
		t.Fatalf("skip on alpha: %d %s\n%s", resp.StatusCode, resp.Header.Get("Location"), body)
	}
	if e := entryOf(t, p.alpha, "ev-pending"); e.State != state.Abandoned {
		t.Errorf("alpha's entry after its skip: %+v", e)
	}
	if e := entryOf(t, p.beta, "ev-pending"); e.State != state.Pending {
		t.Errorf("a skip on alpha changed beta two's entry: %+v", e)
	}
	// Each hotel's snapshot shows its own action only.
	_, body = p.do("GET", "/hotels/alpha/", nil, nil)
	if strings.Contains(body, "ev-pending") || !strings.Contains(body, "ev-refused") {
		t.Error("alpha's page does not show its skip, or shows beta two's retry")
	}
	if logs := p.logs.String(); !strings.Contains(logs, "action=retry who=cli:root") || !strings.Contains(logs, `hotel="beta two"`) || !strings.Contains(logs, "hotel=alpha") {
		t.Errorf("the log does not name the hotels acted on:\n%s", logs)
	}
}

func TestAcceptsPost(t *testing.T) { atT0(t, testAcceptsPost) }

func testAcceptsPost(t *testing.T) {
	fleet := newFleetPage(t, testToken)
	fs := fleet.s
	one := newTestPage(t, testToken)
	ones := one.s
	for _, c := range []struct {
		s            *Server
		method, path string
		want         bool
	}{
		{fs, "POST", "/hotels/alpha/retry", true},
		{fs, "POST", "/hotels/alpha/skip", true},
		{fs, "POST", "/hotels/any-name/read-now", true},
		{fs, "POST", "/login", true},
		{fs, "POST", "/logout", true},
		{fs, "POST", "/retry", false},
		{fs, "POST", "/hotels/alpha/tickets", false},
		{fs, "POST", "/hotels/alpha/retry/x", false},
		{fs, "GET", "/hotels/alpha/retry", false},
		{ones, "POST", "/retry", true},
		{ones, "POST", "/read-now", true},
		{ones, "POST", "/hotels/alpha/retry", false},
		{ones, "POST", "/tickets", false},
	} {
		r := httptest.NewRequest(c.method, c.path, nil)
		if got := c.s.AcceptsPost(r); got != c.want {
			t.Errorf("AcceptsPost(%s %s) on the %s page = %v", c.method, c.path, map[bool]string{true: "fleet's", false: "one hotel's"}[c.s == fs], got)
		}
	}
}

// TestOneHotelLinksUnchanged: the page of a daemon of one hotel keeps its
// paths: no hotel prefix, no list of hotels.
func TestOneHotelLinksUnchanged(t *testing.T) { atT0(t, testOneHotelLinksUnchanged) }

func testOneHotelLinksUnchanged(t *testing.T) {
	p := newTestPage(t, testToken)
	p.login("Ines", testToken)
	_, body := p.do("GET", "/", nil, nil)
	for _, want := range []string{`<a href="/" aria-current="page">Status</a>`, `<a href="/tickets">Requests</a>`, `action="/retry?id=ev-refused"`, `href="/tickets?errors=1"`} {
		if !strings.Contains(body, want) {
			t.Errorf("the one hotel's page lacks %s", want)
		}
	}
	if strings.Contains(body, "/hotels") || strings.Contains(body, ">Hotels<") {
		t.Error("the one hotel's page links a list of hotels")
	}
}
