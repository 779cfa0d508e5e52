package freshdesk_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/uuid"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/freshdesk"
	"github.com/ticketbridge/ticketbridge/adapters/freshdesk/freshdeskfake"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/internal/httpretry"
	"github.com/ticketbridge/ticketbridge/internal/testutil"
)

var ctx = context.Background()

func upstreamTicket(desc string) adapters.Ticket {
	return adapters.Ticket{
		UpstreamID: uuid.NewString(), Department: "housekeeping", Status: guestapi.StatusNew,
		TaskDescription: desc, Origin: guestapi.OriginGuest,
		CreatedAt: time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC), UpdatedAt: time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC),
	}
}

func guestMessage(body string, public bool) adapters.Message {
	return adapters.Message{
		UpstreamID: uuid.NewString(), AuthorType: guestapi.AuthorGuest, AuthorName: "Ada Guest",
		Body: body, Public: public, CreatedAt: time.Date(2026, 3, 14, 9, 33, 0, 0, time.UTC),
	}
}

func (e *env) ticket(t testing.TB, ref adapters.Ref) freshdeskfake.Ticket {
	t.Helper()
	id, _ := strconv.ParseInt(string(ref), 10, 64)
	tk, ok := e.fake.Ticket(id)
	if !ok {
		t.Fatalf("no ticket %s", ref)
	}
	return tk
}

// requests counts the requests the fake received with method and a path
// ending in suffix.
func (e *env) requests(method, suffix string) int {
	n := 0
	for _, r := range e.fake.Requests() {
		if r.Method == method && strings.HasSuffix(r.Path, suffix) {
			n++
		}
	}
	return n
}

func drain(t *testing.T, hd adapters.Helpdesk, c adapters.Cursor) ([]adapters.Event, adapters.Cursor) {
	t.Helper()
	var out []adapters.Event
	for range 100 {
		evs, next, err := hd.Changes(ctx, c)
		if err != nil {
			t.Fatalf("Changes(%q): %v", c, err)
		}
		out = append(out, evs...)
		if len(evs) == 0 && next == c {
			return out, c
		}
		c = next
	}
	t.Fatal("Changes did not run dry")
	return nil, ""
}

func TestTicketAsCreated(t *testing.T) {
	e := newEnv(t, freshdeskfake.Options{})
	g := e.fake.AddGroup("Housekeeping")
	cfg := e.config()
	cfg.Groups = freshdesk.Groups{"housekeeping": g}
	a := e.open(t, cfg)
	up := upstreamTicket("Two towels to room 214\nblue if possible")
	up.Status = guestapi.StatusDone
	ref, err := a.EnsureTicket(ctx, up)
	if err != nil {
		t.Fatal(err)
	}
	tk := e.ticket(t, ref)
	if tk.Subject != "[housekeeping] Two towels to room 214" || tk.Status != 4 || tk.GroupID != g || fmt.Sprint(tk.Tags) != "[ticketbridge origin_guest]" {
		t.Errorf("ticket: %+v", tk)
	}
	if tk.CustomFields["cf_guest_request_id"] != up.UpstreamID || tk.CustomFields["cf_guest_request_status"] != "4/1" {
		t.Errorf("custom fields %v", tk.CustomFields)
	}
	for _, want := range []string{"Two towels to room 214\nblue if possible", "Department: housekeeping", "Guest request: " + up.UpstreamID} {
		if !strings.Contains(tk.DescriptionText, want) {
			t.Errorf("description %q lacks %q", tk.DescriptionText, want)
		}
	}
	var body map[string]any
	for _, r := range e.fake.Requests() {
		if r.Method == "POST" && r.Path == "/api/v2/tickets" {
			if err := json.Unmarshal(r.Body, &body); err != nil {
				t.Fatal(err)
			}
		}
	}
	// No priority: Freshdesk's default (low) until a priority rule's
	// reaches the ticket through Update.
	if _, ok := body["priority"]; body["email"] != freshdesk.DefaultRequester || ok {
		t.Errorf("create body %v", body)
	}
}

func TestNotesNeverReplies(t *testing.T) {
	e := newEnv(t, freshdeskfake.Options{})
	a := e.open(t, e.config())
	ref, err := a.EnsureTicket(ctx, upstreamTicket("Kettle"))
	if err != nil {
		t.Fatal(err)
	}
	msgs := []adapters.Message{guestMessage("It is broken.", true), guestMessage("Staff only.", false)}
	if _, err := a.Append(ctx, ref, msgs); err != nil {
		t.Fatal(err)
	}
	if n := e.requests("POST", "/reply"); n != 0 {
		t.Errorf("the adapter sent %d replies; Freshdesk would e-mail them to the requester", n)
	}
	cs := e.ticket(t, ref).Conversations
	if len(cs) != 2 || cs[0].Source != freshdeskfake.SourceNote || cs[0].Private || !cs[1].Private {
		t.Fatalf("conversations %+v", cs)
	}
	want := "Ada Guest (guest), 2026-03-14 09:33 UTC\n\nIt is broken.\n\n[ticketbridge message " + msgs[0].UpstreamID + "]"
	if cs[0].BodyText != want {
		t.Errorf("note reads %q, want %q", cs[0].BodyText, want)
	}
	if !strings.Contains(cs[1].BodyText, ", internal note") {
		t.Errorf("private note %q does not say it is internal", cs[1].BodyText)
	}
}

// TestLostAnswers: Freshdesk takes a creation or a note but the answer is
// lost; the call fails, and the next one finds what was made instead of
// making it twice.
func TestLostAnswers(t *testing.T) {
	e := newEnv(t, freshdeskfake.Options{})
	a := e.open(t, e.config())
	up := upstreamTicket("Late checkout")
	e.fake.Inject(freshdeskfake.Fault{Method: "POST", Path: "/api/v2/tickets", Status: http.StatusBadGateway, AfterApply: true})
	if _, err := a.EnsureTicket(ctx, up); err == nil {
		t.Fatal("EnsureTicket succeeded although the answer was lost")
	}
	ref, err := e.open(t, e.config()).EnsureTicket(ctx, up)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(e.fake.Tickets()); n != 1 {
		t.Fatalf("%d tickets after a lost answer and a retry, want 1", n)
	}
	if n := e.requests("POST", "/api/v2/tickets"); n != 1 {
		t.Errorf("the creation was sent %d times; a POST whose outcome is unknown must not be repeated", n)
	}

	m := guestMessage("Until noon, please.", true)
	e.fake.Inject(freshdeskfake.Fault{Method: "POST", Path: "/api/v2/tickets/" + string(ref) + "/notes", Status: http.StatusServiceUnavailable, AfterApply: true})
	if _, err := a.Append(ctx, ref, []adapters.Message{m}); err == nil {
		t.Fatal("Append succeeded although the answer was lost")
	}
	got, err := a.Append(ctx, ref, []adapters.Message{m})
	if err != nil {
		t.Fatal(err)
	}
	if !got[0].Existed || len(e.ticket(t, ref).Conversations) != 1 {
		t.Errorf("after a lost answer: %+v, %d notes; want the first note found", got, len(e.ticket(t, ref).Conversations))
	}
}

// TestReopen: a guest's public message reopens a resolved ticket, and the
// reopen is the bridge's own.
func TestReopen(t *testing.T) {
	e := newEnv(t, freshdeskfake.Options{})
	a := e.open(t, e.config())
	ref, err := a.EnsureTicket(ctx, upstreamTicket("Umbrella"))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.SetStatus(ctx, ref, guestapi.StatusDone); err != nil {
		t.Fatal(err)
	}
	_, c0 := drain(t, a, "")
	if _, err := a.Append(ctx, ref, []adapters.Message{guestMessage("internal", false)}); err != nil {
		t.Fatal(err)
	}
	if st := e.ticket(t, ref).Status; st != 4 {
		t.Errorf("an internal message changed the status to %d", st)
	}
	if _, err := a.Append(ctx, ref, []adapters.Message{guestMessage("Found it?", true)}); err != nil {
		t.Fatal(err)
	}
	tk := e.ticket(t, ref)
	if tk.Status != 2 || tk.CustomFields["cf_guest_request_status"] != "2/3" {
		t.Errorf("after a guest message: status %d, record %q; want 2 and 2/3", tk.Status, tk.CustomFields["cf_guest_request_status"])
	}
	if evs, _ := drain(t, a, c0); len(evs) != 0 {
		t.Errorf("the reopen came back as %+v", evs)
	}
}

// TestStatusChanges follows the status record through several polls.
func TestStatusChanges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newBubbleEnv(t, freshdeskfake.Options{}, 0)
		a := e.open(t, e.config())
		ref, err := a.EnsureTicket(ctx, upstreamTicket("Noise"))
		if err != nil {
			t.Fatal(err)
		}
		id, _ := strconv.ParseInt(string(ref), 10, 64)
		anna := e.agent("Anna")
		_, c := drain(t, a, "")
		poll := func() []adapters.Event {
			t.Helper()
			time.Sleep(30 * time.Second)
			evs, next := drain(t, a, c)
			c = next
			return evs
		}

		// Open to pending maps in_progress to in_progress: nothing to say.
		if err := e.fake.SetStatus(id, anna, 3); err != nil {
			t.Fatal(err)
		}
		if evs := poll(); len(evs) != 0 {
			t.Errorf("open to pending: %+v", evs)
		}
		// Pending, then resolved, between two polls: one event, done.
		if err := e.fake.SetStatus(id, anna, 2); err != nil {
			t.Fatal(err)
		}
		if err := e.fake.SetStatus(id, anna, 4); err != nil {
			t.Fatal(err)
		}
		evs := poll()
		if len(evs) != 1 || evs[0].Kind != adapters.EventStatus || evs[0].Status != guestapi.StatusDone || evs[0].ID != fmt.Sprintf("status-%d-1-4", id) {
			t.Fatalf("resolved: %+v", evs)
		}
		first := evs[0].ID
		// Until it is delivered the change is reported with the same id, by a
		// fresh instance too.
		if again, _ := drain(t, e.open(t, e.config()), ""); len(again) != 1 || again[0].ID != first {
			t.Errorf("from the start on a fresh instance: %+v", again)
		}
		for range 2 {
			if err := a.MarkSent(ctx, ref, first, ""); err != nil {
				t.Fatal(err)
			}
		}
		if got := e.ticket(t, ref).CustomFields["cf_guest_request_status"]; got != "4/2" {
			t.Errorf("record after MarkSent: %q, want 4/2", got)
		}
		if again, _ := drain(t, e.open(t, e.config()), ""); len(again) != 0 {
			t.Errorf("a delivered change came again: %+v", again)
		}
		// Resolved to closed maps done to done: nothing.
		if err := e.fake.SetStatus(id, anna, 5); err != nil {
			t.Fatal(err)
		}
		if evs := poll(); len(evs) != 0 {
			t.Errorf("resolved to closed: %+v", evs)
		}
		// Reopened: in_progress, with an id of its own.
		if err := e.fake.SetStatus(id, anna, 2); err != nil {
			t.Fatal(err)
		}
		evs = poll()
		if len(evs) != 1 || evs[0].Status != guestapi.StatusInProgress || evs[0].ID == first {
			t.Fatalf("reopened: %+v", evs)
		}
		// The bridge sets done meanwhile: the pending change is superseded and
		// its late MarkSent leaves the record alone.
		if err := a.SetStatus(ctx, ref, guestapi.StatusDone); err != nil {
			t.Fatal(err)
		}
		if err := a.MarkSent(ctx, ref, evs[0].ID, ""); err != nil {
			t.Fatal(err)
		}
		tk := e.ticket(t, ref)
		if tk.Status != 4 || tk.CustomFields["cf_guest_request_status"] != "4/3" {
			t.Errorf("after the bridge's own change: status %d, record %q; want 4, 4/3", tk.Status, tk.CustomFields["cf_guest_request_status"])
		}
		if evs := poll(); len(evs) != 0 {
			t.Errorf("the bridge's change came back: %+v", evs)
		}
		if err := a.MarkSent(ctx, ref, fmt.Sprintf("status-%d-3-5", id+1), ""); !errors.Is(err, adapters.ErrInvalid) {
			t.Errorf("MarkSent of another ticket's status event: %v", err)
		}
	})
}

// TestConversationPaging: markers on later pages of a long conversation
// list are found.
func TestConversationPaging(t *testing.T) {
	e := newEnv(t, freshdeskfake.Options{MaxPerPage: 2})
	cfg := e.config()
	cfg.PageSize = 2
	a := e.open(t, cfg)
	ref, err := a.EnsureTicket(ctx, upstreamTicket("Long thread"))
	if err != nil {
		t.Fatal(err)
	}
	var msgs []adapters.Message
	for i := range 5 {
		msgs = append(msgs, guestMessage(fmt.Sprintf("message %d", i), i%2 == 0))
	}
	if _, err := a.Append(ctx, ref, msgs); err != nil {
		t.Fatal(err)
	}
	f, ok, err := e.open(t, cfg).Lookup(ctx, e.ticket(t, ref).CustomFields["cf_guest_request_id"])
	if err != nil || !ok || len(f.Messages) != 5 {
		t.Fatalf("Lookup found %d of 5 messages (%v, %v)", len(f.Messages), ok, err)
	}
	pages := 0
	for _, r := range e.fake.Requests() {
		if strings.HasSuffix(r.Path, "/conversations") && r.Query.Get("page") == "3" && r.Query.Get("per_page") == "2" {
			pages++
		}
	}
	if pages == 0 {
		t.Errorf("no third page of conversations was read")
	}
}

// TestListingWhileTicketsChange: a ticket updated while a listing runs
// moves to the end of the order; the listing must not skip the ticket
// that slides into its place.
func TestListingWhileTicketsChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newBubbleEnv(t, freshdeskfake.Options{MaxPerPage: 2}, time.Second)
		cfg := e.config()
		cfg.PageSize = 2
		var refs []adapters.Ref
		var ups []adapters.Ticket
		maker := e.open(t, cfg)
		for i := range 5 {
			up := upstreamTicket(fmt.Sprintf("request %d", i))
			ref, err := maker.EnsureTicket(ctx, up)
			if err != nil {
				t.Fatal(err)
			}
			refs, ups = append(refs, ref), append(ups, up)
		}
		// Ten minutes later a fresh instance lists; after its first page an
		// agent touches the first ticket.
		time.Sleep(10 * time.Minute)
		first, _ := strconv.ParseInt(string(refs[0]), 10, 64)
		var touched atomic.Bool
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(time.Second)
			rec := httptest.NewRecorder()
			e.fake.ServeHTTP(rec, r)
			if r.URL.Path == "/api/v2/tickets" && r.Method == "GET" && touched.CompareAndSwap(false, true) {
				if _, err := e.fake.Note(first, e.agent("Anna"), "looking", true); err != nil {
					t.Error(err)
				}
			}
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
		})
		cfg.URL = adapters.ParseURL(testutil.PipeURL)
		opts := e.options()
		opts.HTTP = &http.Client{Transport: testutil.PipeServer(t, h)}
		b, err := freshdesk.New(cfg, adapters.Deps{Logger: e.logger()}, opts)
		if err != nil {
			t.Fatal(err)
		}
		for i, up := range ups {
			ref, err := b.EnsureTicket(ctx, up)
			if err != nil {
				t.Fatal(err)
			}
			if ref != refs[i] {
				t.Errorf("ticket %d: EnsureTicket on a fresh instance gave %s, want %s (a duplicate)", i, ref, refs[i])
			}
		}
		if n := len(e.fake.Tickets()); n != 5 {
			t.Errorf("%d tickets, want 5", n)
		}
	})
}

// TestLinksNotFollowed: the adapter asks for the next page on its own
// address; a Link header naming another host sends the key nowhere.
func TestLinksNotFollowed(t *testing.T) {
	e := newEnv(t, freshdeskfake.Options{MaxPerPage: 1})
	var foreign atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { foreign.Add(1) }))
	t.Cleanup(other.Close)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		e.fake.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		if l := w.Header().Get("Link"); l != "" {
			w.Header().Set("Link", "<"+other.URL+"/api/v2/x?page=2>; rel=\"next\"")
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	}))
	t.Cleanup(srv.Close)
	cfg := e.config()
	cfg.URL, cfg.PageSize = adapters.ParseURL(srv.URL), 1
	opts := e.options()
	opts.HTTP = srv.Client()
	a, err := freshdesk.New(cfg, adapters.Deps{Logger: e.logger()}, opts)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := a.EnsureTicket(ctx, upstreamTicket("x"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Append(ctx, ref, []adapters.Message{guestMessage("a", true), guestMessage("b", true)}); err != nil {
		t.Fatal(err)
	}
	up := e.ticket(t, ref).CustomFields["cf_guest_request_id"]
	f, ok, err := a.Lookup(ctx, up)
	if err != nil || !ok || len(f.Messages) != 2 {
		t.Errorf("Lookup = %+v, %v, %v", f, ok, err)
	}
	if foreign.Load() != 0 {
		t.Errorf("the adapter followed a Link to another host %d times", foreign.Load())
	}
}

// TestRateLimited: a 429 is waited out as Retry-After says, the
// adapter's other requests are held back meanwhile without reaching
// Freshdesk, and the budget is reported.
func TestRateLimited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newBubbleEnv(t, freshdeskfake.Options{RateLimit: 4}, 0)
		a := e.open(t, e.config())
		ref, err := a.EnsureTicket(ctx, upstreamTicket("Budget"))
		if err != nil {
			t.Fatal(err)
		}
		// The budget of 4 is spent by the list, the creation and the first
		// reads of Append; its fifth request waits for the next minute.
		if _, err := a.Append(ctx, ref, []adapters.Message{guestMessage("hello", true)}); err != nil {
			t.Fatalf("Append over the budget: %v", err)
		}
		e.mu.Lock()
		sleeps := append([]time.Duration(nil), e.sleeps...)
		e.mu.Unlock()
		if len(sleeps) != 1 || sleeps[0] <= 0 || sleeps[0] > time.Minute {
			t.Errorf("waits %v, want one within the minute Retry-After named", sleeps)
		}
		rl := a.RateLimit()
		if !rl.Known || rl.Total != 4 || rl.Remaining > 3 {
			t.Errorf("RateLimit() = %+v", rl)
		}
		if !strings.Contains(e.logs.String(), "freshdesk request budget nearly spent") {
			t.Errorf("no warning when the budget ran low:\n%s", e.logs.String())
		}

		// A wait longer than the client sits out, for the ticket list, with
		// the account's budget left: the listing fails temporarily, until the
		// time is up no listing reaches Freshdesk, and notes still do.
		time.Sleep(time.Minute)
		e.fake.Inject(freshdeskfake.Fault{Method: "GET", Path: "/api/v2/tickets", Status: http.StatusTooManyRequests, RetryAfter: "120",
			Header: http.Header{"X-Ratelimit-Total": {"4"}, "X-Ratelimit-Remaining": {"3"}}})
		_, _, err = a.Changes(ctx, "")
		var herr *adapters.HTTPError
		if !errors.As(err, &herr) || herr.StatusCode != http.StatusTooManyRequests || herr.RetryAfter != 120*time.Second || !(herr.Class == httpretry.Retryable) {
			t.Fatalf("Changes during a long 429: %v", err)
		}
		before := e.requests("GET", "/api/v2/tickets")
		_, _, err = a.Changes(ctx, "")
		if !errors.As(err, &herr) || herr.StatusCode != http.StatusTooManyRequests || herr.RetryAfter <= 0 {
			t.Errorf("second Changes during the wait: %v", err)
		}
		if after := e.requests("GET", "/api/v2/tickets"); after != before {
			t.Errorf("%d listings reached Freshdesk while it asked to wait", after-before)
		}
		if _, ok := a.EndpointLimits()[freshdesk.EndpointTicketsList]; !ok {
			t.Errorf("EndpointLimits() = %v, want the ticket list blocked", a.EndpointLimits())
		}
		if _, err := a.Append(ctx, ref, []adapters.Message{guestMessage("while the list waits", true)}); err != nil {
			t.Errorf("Append while only the ticket list is blocked: %v", err)
		}
		time.Sleep(2 * time.Minute)
		if _, _, err := a.Changes(ctx, ""); err != nil {
			t.Errorf("Changes after the wait: %v", err)
		}
	})
}

// TestLookupsSpareTheTicketList: the ticket list has Freshdesk's smallest
// budget (20 a minute on the Growth plan). An instance lists once for its
// first lookup and then answers EnsureTicket and Lookup from what it
// knows, listing again only after a creation whose outcome is unknown;
// with a budget of one listing a minute, every creation still goes
// through.
func TestLookupsSpareTheTicketList(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newBubbleEnv(t, freshdeskfake.Options{EndpointLimits: map[string]int{freshdeskfake.EndpointTicketsList: 1}}, 0)
		a := e.open(t, e.config())
		var ups []adapters.Ticket
		for i := range 5 {
			up := upstreamTicket(fmt.Sprintf("Request %d", i))
			ups = append(ups, up)
			if _, err := a.EnsureTicket(ctx, up); err != nil {
				t.Fatalf("EnsureTicket %d: %v", i, err)
			}
		}
		for _, up := range ups {
			if _, ok, err := a.Lookup(ctx, up.UpstreamID); err != nil || !ok {
				t.Fatalf("Lookup: %v, %v", ok, err)
			}
		}
		if n := e.requests("GET", "/api/v2/tickets"); n != 1 {
			t.Errorf("%d listings for 5 creations and 5 lookups, want 1", n)
		}
		e.mu.Lock()
		sleeps := len(e.sleeps)
		e.mu.Unlock()
		if sleeps != 0 {
			t.Errorf("%d waits for the list budget, want none", sleeps)
		}

		time.Sleep(time.Minute)
		up := upstreamTicket("Lost answer")
		e.fake.Inject(freshdeskfake.Fault{Method: "POST", Path: "/api/v2/tickets", Status: http.StatusBadGateway, AfterApply: true})
		if _, err := a.EnsureTicket(ctx, up); err == nil {
			t.Fatal("EnsureTicket succeeded although the answer was lost")
		}
		if _, err := a.EnsureTicket(ctx, up); err != nil {
			t.Fatal(err)
		}
		if n := len(e.fake.Tickets()); n != 6 {
			t.Errorf("%d tickets, want 6: the retry after a lost answer must find the ticket", n)
		}
	})
}

// TestRateLimitedWithoutRetryAfter: a 429 without Retry-After waits a
// minute, Freshdesk's window.
func TestRateLimitedWithoutRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newBubbleEnv(t, freshdeskfake.Options{}, 0)
		a := e.open(t, e.config())
		e.fake.Inject(freshdeskfake.Fault{Path: "/api/v2/agents/me", Status: http.StatusTooManyRequests})
		if err := a.Check(ctx); err != nil {
			t.Fatal(err)
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		if len(e.sleeps) != 1 || e.sleeps[0] != time.Minute {
			t.Errorf("waits %v, want one minute", e.sleeps)
		}
	})
}

func TestCheck(t *testing.T) {
	e := newEnv(t, freshdeskfake.Options{})
	if err := e.open(t, e.config()).Check(ctx); err != nil {
		t.Errorf("Check on a well set up helpdesk: %v", err)
	}

	wrong := e.config()
	wrong.APIKey = "not-the-key-0123456789"
	err := e.open(t, wrong).Check(ctx)
	if !errors.Is(err, adapters.ErrAuth) || !strings.Contains(err.Error(), "TICKETBRIDGE_FRESHDESK_API_KEY") || strings.Contains(err.Error(), wrong.APIKey.Reveal()) {
		t.Errorf("Check with a wrong key: %v", err)
	}

	scoped := newEnv(t, freshdeskfake.Options{TicketScope: freshdeskfake.ScopeGroup})
	if err := scoped.open(t, scoped.config()).Check(ctx); err == nil || !strings.Contains(err.Error(), "global access") {
		t.Errorf("Check of a group-scoped agent: %v", err)
	}

	bare := newEnv(t, freshdeskfake.Options{Fields: []freshdeskfake.Field{{Name: "cf_guest_request_id", Label: "Guest request id", Type: "custom_text"}}})
	err = bare.open(t, bare.config()).Check(ctx)
	for _, want := range []string{"cf_guest_request_status", `"Guest request status"`, "Admin > Workflows > Ticket Fields", "TICKETBRIDGE_FRESHDESK_STATUS_FIELD"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check without the status field: %v; want it to say %s", err, want)
		}
	}

	typed := newEnv(t, freshdeskfake.Options{Fields: []freshdeskfake.Field{
		{Name: "cf_guest_request_id", Label: "Guest request id", Type: "custom_number"},
		{Name: "cf_guest_request_status", Label: "Guest request status", Type: "custom_text"},
	}})
	if err := typed.open(t, typed.config()).Check(ctx); err == nil || !strings.Contains(err.Error(), "custom_number") {
		t.Errorf("Check with a number field: %v", err)
	}

	g := e.fake.AddGroup("Maintenance")
	cfg := e.config()
	cfg.Groups = freshdesk.Groups{"maintenance": g, "housekeeping": g + 1000}
	if err := e.open(t, cfg).Check(ctx); err == nil || !strings.Contains(err.Error(), "department housekeeping") {
		t.Errorf("Check with a missing group: %v", err)
	}
}

// TestNoSecretInErrors: Freshdesk's answers (here one that echoes the key)
// and the adapter's errors and logs never show the API key.
func TestNoSecretInErrors(t *testing.T) {
	e := newEnv(t, freshdeskfake.Options{})
	a := e.open(t, e.config())
	e.fake.Inject(freshdeskfake.Fault{Status: http.StatusInternalServerError, Times: 10, Body: `{"message":"bad key ` + testKey + `"}`})
	_, err := a.EnsureTicket(ctx, upstreamTicket("x"))
	if err == nil {
		t.Fatal("EnsureTicket succeeded against a failing helpdesk")
	}
	if strings.Contains(err.Error(), testKey) || !strings.Contains(err.Error(), "[redacted]") {
		t.Errorf("the error shows the key or hides the answer: %v", err)
	}
	if strings.Contains(e.logs.String(), testKey) {
		t.Errorf("the log shows the key:\n%s", e.logs.String())
	}
	if !strings.Contains(e.logs.String(), "retrying") {
		t.Errorf("the retries were not logged, so this test proves nothing:\n%s", e.logs.String())
	}
	if strings.Contains(fmt.Sprintf("%v %+v %s", a, a, a), testKey) {
		t.Errorf("the adapter's printed form shows the key")
	}
	for _, r := range e.fake.Requests() {
		if r.Auth != testKey {
			t.Fatalf("a request went without the key as basic-auth user: %+v", r)
		}
	}
}

func TestBadCursor(t *testing.T) {
	e := newEnv(t, freshdeskfake.Options{})
	a := e.open(t, e.config())
	for _, c := range []adapters.Cursor{"zd1:5:", "fd1:x:", "fd1:5:a b@1", "fd1:5:id@x"} {
		if _, _, err := a.Changes(ctx, c); !errors.Is(err, adapters.ErrInvalid) {
			t.Errorf("Changes(%q): %v, want ErrInvalid", c, err)
		}
	}
}

// TestDeletedTicket: a ticket an agent deleted is not found, and Lookup
// reports none.
func TestDeletedTicket(t *testing.T) {
	e := newEnv(t, freshdeskfake.Options{})
	a := e.open(t, e.config())
	up := upstreamTicket("Gone")
	ref, err := a.EnsureTicket(ctx, up)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := strconv.ParseInt(string(ref), 10, 64)
	if err := e.fake.Delete(id); err != nil {
		t.Fatal(err)
	}
	if err := a.SetStatus(ctx, ref, guestapi.StatusDone); !errors.Is(err, adapters.ErrNotFound) {
		t.Errorf("SetStatus of a deleted ticket: %v", err)
	}
	if _, ok, err := a.Lookup(ctx, up.UpstreamID); ok || err != nil {
		t.Errorf("Lookup of a deleted ticket: %v, %v", ok, err)
	}

	// An instance whose index still names the deleted ticket makes a new
	// one rather than hand out the deleted one.
	b := e.open(t, e.config())
	other := upstreamTicket("Gone too")
	oref, err := b.EnsureTicket(ctx, other)
	if err != nil {
		t.Fatal(err)
	}
	oid, _ := strconv.ParseInt(string(oref), 10, 64)
	if err := e.fake.Delete(oid); err != nil {
		t.Fatal(err)
	}
	again, err := b.EnsureTicket(ctx, other)
	if err != nil || again == oref {
		t.Errorf("EnsureTicket after the deletion = %s, %v; want a new ticket", again, err)
	}

	// A ticket that vanishes between the listing and the reading of its
	// conversations does not stop Changes.
	e.fake.Inject(freshdeskfake.Fault{Path: "/api/v2/tickets/" + string(again) + "/conversations", Status: http.StatusNotFound})
	if _, _, err := b.Changes(ctx, ""); err != nil {
		t.Errorf("Changes with a ticket gone meanwhile: %v", err)
	}
}

// TestAgentPublicNote: an agent's public note is a reply to the guest;
// notes by the API agent, incoming ones and empty ones are not carried.
func TestAgentPublicNote(t *testing.T) {
	e := newEnv(t, freshdeskfake.Options{})
	a := e.open(t, e.config())
	ref, err := a.EnsureTicket(ctx, upstreamTicket("x"))
	if err != nil {
		t.Fatal(err)
	}
	id, _ := strconv.ParseInt(string(ref), 10, 64)
	if _, err := e.fake.Note(id, e.agent("Bob"), "Visible to the guest", false); err != nil {
		t.Fatal(err)
	}
	if _, err := e.fake.Note(id, e.fake.APIAgentID(), "someone using the bridge's agent", false); err != nil {
		t.Fatal(err)
	}
	evs, _ := drain(t, a, "")
	if len(evs) != 1 || evs[0].Kind != adapters.EventReply || evs[0].Body != "Visible to the guest" || evs[0].AuthorName != "Bob" {
		t.Errorf("events %+v", evs)
	}
}

// TestMarkersWithFlatBodyText: a Freshdesk whose body_text runs a note's
// lines together still lets a fresh adapter (the bridge's state lost) find
// the notes it wrote, by the marker on the last line of the HTML body, so
// that a retried Append writes nothing twice.
func TestMarkersWithFlatBodyText(t *testing.T) {
	e := newEnv(t, freshdeskfake.Options{FlatBodyText: true})
	a := e.open(t, e.config())
	up := upstreamTicket("Kettle")
	ref, err := a.EnsureTicket(ctx, up)
	if err != nil {
		t.Fatal(err)
	}
	msg := guestMessage("It is broken.\nPlease hurry.", true)
	if _, err := a.Append(ctx, ref, []adapters.Message{msg}); err != nil {
		t.Fatal(err)
	}
	if err := a.MarkSent(ctx, ref, "conv-77", "m-77"); err != nil {
		t.Fatal(err)
	}
	if got := e.ticket(t, ref).Conversations[0].BodyText; strings.Contains(got, "\n") {
		t.Fatalf("the fake kept the line breaks of body_text: %q", got)
	}
	b := e.open(t, e.config())
	f, ok, err := b.Lookup(ctx, up.UpstreamID)
	if err != nil || !ok {
		t.Fatalf("Lookup: %v, %v", ok, err)
	}
	if f.Messages[msg.UpstreamID] == "" || f.Sent["conv-77"] != "m-77" {
		t.Errorf("Lookup found messages %v and sent %v, want the note and the delivery", f.Messages, f.Sent)
	}
	got, err := b.Append(ctx, ref, []adapters.Message{msg})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !got[0].Existed {
		t.Errorf("Append again: %+v, want the existing note", got)
	}
	if n := len(e.ticket(t, ref).Conversations); n != 2 {
		t.Errorf("%d conversations, want the note and the delivery record", n)
	}
}

// TestArchivedTicket: Freshdesk archives a ticket closed for long; the
// ticket endpoints then answer 404 and only /tickets/archived/{id} shows
// it. A new guest message for it goes to one follow-up (also from a
// restarted instance), old messages are not written again, Lookup reports
// the markers of both, and no second ticket is made by EnsureTicket.
func TestArchivedTicket(t *testing.T) {
	e := newEnv(t, freshdeskfake.Options{})
	a := e.open(t, e.config())
	up := upstreamTicket("Umbrella")
	ref, err := a.EnsureTicket(ctx, up)
	if err != nil {
		t.Fatal(err)
	}
	old := guestMessage("Can I borrow one?", true)
	if _, err := a.Append(ctx, ref, []adapters.Message{old}); err != nil {
		t.Fatal(err)
	}
	id, _ := strconv.ParseInt(string(ref), 10, 64)
	if err := e.fake.SetStatus(id, e.fake.AddAgent("Anna"), freshdeskfake.StatusClosed); err != nil {
		t.Fatal(err)
	}
	if err := e.fake.Archive(id); err != nil {
		t.Fatal(err)
	}
	if again, err := a.EnsureTicket(ctx, up); err != nil || again != ref {
		t.Fatalf("EnsureTicket of an archived ticket: %s, %v; want %s", again, err, ref)
	}
	if err := a.SetStatus(ctx, ref, guestapi.StatusDone); err != nil {
		t.Fatalf("SetStatus done on an archived ticket: %v", err)
	}
	if n := len(e.fake.Tickets()); n != 1 {
		t.Fatalf("%d tickets after a closing status on an archived one, want 1", n)
	}
	msg := guestMessage("It rains again.", true)
	got, err := a.Append(ctx, ref, []adapters.Message{old, msg})
	if err != nil {
		t.Fatalf("Append to an archived ticket: %v", err)
	}
	if !got[0].Existed || got[1].Existed {
		t.Errorf("Append: %+v, want the old message existing and the new one added", got)
	}
	tickets := e.fake.Tickets()
	if len(tickets) != 2 || tickets[1].CustomFields["cf_guest_request_id"] != up.UpstreamID || !strings.Contains(tickets[1].DescriptionText, "archived ticket #"+string(ref)) {
		t.Fatalf("tickets %+v, want the archived one and its follow-up", tickets)
	}
	b := e.open(t, e.config())
	third := guestMessage("Thanks!", true)
	if _, err := b.Append(ctx, ref, []adapters.Message{old, msg, third}); err != nil {
		t.Fatalf("Append from a restarted instance: %v", err)
	}
	if n := len(e.fake.Tickets()); n != 2 {
		t.Errorf("%d tickets after a restart, want the archived one and one follow-up", n)
	}
	if n := len(e.ticket(t, refOf(tickets[1].ID)).Conversations); n != 2 {
		t.Errorf("the follow-up holds %d notes, want 2", n)
	}
	f, ok, err := b.Lookup(ctx, up.UpstreamID)
	if err != nil || !ok || f.Ref != ref {
		t.Fatalf("Lookup: %+v, %v, %v; want Ref %s", f, ok, err, ref)
	}
	if again, err := b.EnsureTicket(ctx, up); err != nil || again != ref {
		t.Errorf("EnsureTicket after the follow-up: %s, %v; want %s", again, err, ref)
	}
	for _, m := range []adapters.Message{old, msg, third} {
		if f.Messages[m.UpstreamID] == "" {
			t.Errorf("Lookup misses message %s: %v", m.UpstreamID, f.Messages)
		}
	}
}

func refOf(id int64) adapters.Ref { return adapters.Ref(strconv.FormatInt(id, 10)) }

// TestChangesLateCommit: a reply whose time lies before the last poll but
// that became visible only after it (a write committed late, or clocks a
// little apart) is still reported, once: the listing starts a minute
// before the cursor, which names the events of that minute it reported.
func TestChangesLateCommit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newBubbleEnv(t, freshdeskfake.Options{}, 0)
		a := e.open(t, e.config())
		ref, err := a.EnsureTicket(ctx, upstreamTicket("Kettle"))
		if err != nil {
			t.Fatal(err)
		}
		id, _ := strconv.ParseInt(string(ref), 10, 64)
		// Another ticket, changed five minutes later, moves the cursor on.
		time.Sleep(5 * time.Minute)
		if _, err := a.EnsureTicket(ctx, upstreamTicket("Iron")); err != nil {
			t.Fatal(err)
		}
		_, cur := drain(t, a, "")
		e.fake.CommitLate(30*time.Second, func() { _, err = e.fake.Reply(id, e.agent("Anna"), "Committed late.") })
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		evs, cur := drain(t, a, cur)
		if len(evs) != 1 || !strings.Contains(evs[0].Body, "Committed late.") {
			t.Fatalf("after a late commit: events %+v; want the reply", evs)
		}
		if again, _ := drain(t, a, cur); len(again) != 0 {
			t.Errorf("polled again: %+v; the late reply was reported twice", again)
		}
	})
}
