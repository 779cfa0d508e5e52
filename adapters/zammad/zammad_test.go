package zammad_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/saas"
	"github.com/ticketbridge/ticketbridge/adapters/zammad"
	"github.com/ticketbridge/ticketbridge/adapters/zammad/zammadfake"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/internal/httpretry"
)

var when = time.Date(2026, 3, 14, 9, 30, 0, 0, time.UTC)

func tk(id string) adapters.Ticket {
	return adapters.Ticket{UpstreamID: id, Department: "housekeeping", Status: guestapi.StatusNew, TaskDescription: "Two towels to room 214",
		Origin: guestapi.OriginGuest, CreatedAt: when, UpdatedAt: when}
}

func msg(id, body string, public bool) adapters.Message {
	return adapters.Message{UpstreamID: id, AuthorType: guestapi.AuthorGuest, AuthorName: "Ada Guest", Body: body, Public: public, CreatedAt: when}
}

// mustEnsure creates the ticket and returns its Zammad id.
func mustEnsure(t *testing.T, a *zammad.Adapter, ticket adapters.Ticket) (adapters.Ref, int64) {
	t.Helper()
	ref, err := a.EnsureTicket(t.Context(), ticket)
	if err != nil {
		t.Fatalf("EnsureTicket: %v", err)
	}
	id, _ := ticketID(ref)
	return ref, id
}

// drain calls Changes until it reports nothing and returns every event.
func drain(t *testing.T, a *zammad.Adapter, cur adapters.Cursor) ([]adapters.Event, adapters.Cursor) {
	t.Helper()
	var out []adapters.Event
	for range 100 {
		evs, next, err := a.Changes(t.Context(), cur)
		if err != nil {
			t.Fatalf("Changes(%q): %v", cur, err)
		}
		out = append(out, evs...)
		if len(evs) == 0 && next == cur {
			return out, cur
		}
		cur = next
	}
	t.Fatal("Changes did not run dry")
	return nil, ""
}

func TestEnsureTicketWritesWhatZammadNeeds(t *testing.T) {
	e := newEnv(t, zammadfake.Options{})
	a := e.open(t, e.config(), e.options())
	ticket := tk("u-1")
	rating := 4.5
	ticket.GuestRating, ticket.Comments = &rating, "VIP"
	_, id := mustEnsure(t, a, ticket)
	got, _ := e.fake.Ticket(id)
	if got.Title != "[housekeeping] Two towels to room 214" || got.Group != "Housekeeping" || got.State != "new" || got.Attributes[testField] != "u-1" {
		t.Errorf("ticket %+v", got)
	}
	cust, ok := e.fake.User(got.CustomerID)
	if !ok || cust.Email != testCustomer {
		t.Errorf("customer %+v, want %s (created by guess:)", cust, testCustomer)
	}
	first := got.Articles[0]
	for _, want := range []string{"Two towels to room 214", "Department: housekeeping", "Guest rating: 4.5", "Console comment: VIP", "[ticketbridge ticket u-1]"} {
		if !strings.Contains(first.Body, want) {
			t.Errorf("first article lacks %q:\n%s", want, first.Body)
		}
	}
	if first.Internal || first.ContentType != "text/plain" || first.Type != "note" {
		t.Errorf("first article of a guest's request: internal %v, %s, %s", first.Internal, first.ContentType, first.Type)
	}
	staff := tk("u-2")
	staff.Origin, staff.Department = guestapi.OriginStaff, "spa"
	_, id2 := mustEnsure(t, a, staff)
	got2, _ := e.fake.Ticket(id2)
	if !got2.Articles[0].Internal || got2.Group != "Users" {
		t.Errorf("a staff request: first article internal %v, group %q; want internal, the default group", got2.Articles[0].Internal, got2.Group)
	}
}

func TestCustomerByLogin(t *testing.T) {
	e := newEnv(t, zammadfake.Options{})
	agentID := e.agent("Front Desk")
	u, _ := e.fake.User(agentID)
	cfg := e.config()
	cfg.Customer = strings.TrimSuffix(u.Login, "@staff.hotel.example") // not an address: a login
	a := e.open(t, cfg, e.options())
	if _, err := a.EnsureTicket(t.Context(), tk("u-1")); !errors.Is(err, adapters.ErrInvalid) {
		t.Errorf("an unknown login as customer: %v, want ErrInvalid (Zammad's 422)", err)
	}
	cfg.Customer = u.Login
	a = e.open(t, cfg, e.options())
	_, id := mustEnsure(t, a, tk("u-1"))
	if got, _ := e.fake.Ticket(id); got.CustomerID != agentID {
		t.Errorf("customer %d, want the user with login %s", got.CustomerID, u.Login)
	}
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  zammadfake.Options
		cfg   func(*zammad.Config)
		setup func(t *testing.T, e *env)
		want  []string // "" entries mean: no error
		auth  bool
	}{
		{name: "Ready", opts: zammadfake.Options{}},
		{name: "BadToken", cfg: func(c *zammad.Config) { c.Token = "not-the-token" }, want: []string{"TICKETBRIDGE_ZAMMAD_TOKEN", "Token Access", "ticket.agent"}, auth: true},
		{name: "NoAttribute", opts: zammadfake.Options{Attributes: []zammadfake.Attribute{}}, want: []string{`"guest_request_id"`, "Admin > System > Objects > Ticket > New Attribute", "Text field", "Update Database"}},
		{name: "AttributeNotApplied", opts: zammadfake.Options{Attributes: []zammadfake.Attribute{{Name: testField, Pending: true}}}, want: []string{"not applied", "Update Database"}},
		{name: "AttributeNotText", opts: zammadfake.Options{Attributes: []zammadfake.Attribute{{Name: testField, DataType: "select"}}}, want: []string{"Text field", "ID_FIELD"}},
		{name: "AttributeInactive", opts: zammadfake.Options{Attributes: []zammadfake.Attribute{{Name: testField, Inactive: true}}}, want: []string{"inactive"}},
		{name: "AttributeTooShort", opts: zammadfake.Options{Attributes: []zammadfake.Attribute{{Name: testField, MaxLength: 20}}}, want: []string{"36 characters"}},
		{name: "OtherField", cfg: func(c *zammad.Config) { c.IDField = "request_ref" }, want: []string{`"request_ref"`}},
		{name: "NoGroupAccess", opts: zammadfake.Options{NoAccess: []string{"Housekeeping"}}, want: []string{`"Housekeeping"`, "TICKETBRIDGE_ZAMMAD_GROUPS (department housekeeping)", "full access"}},
		{name: "UnknownGroup", cfg: func(c *zammad.Config) { c.Group = "Reception" }, want: []string{`"Reception"`, "TICKETBRIDGE_ZAMMAD_GROUP", "create the group"}},
		{name: "NoAdminObjectAttributeOnTickets", opts: zammadfake.Options{Permissions: []string{zammadfake.PermTicketAgent}},
			setup: func(t *testing.T, e *env) { mustEnsure(t, e.open(t, e.config(), e.options()), tk("u-1")) }},
		{name: "NoAdminObjectNoTickets", opts: zammadfake.Options{Permissions: []string{zammadfake.PermTicketAgent}}},
		{name: "NoDueAttribute", opts: zammadfake.Options{Attributes: []zammadfake.Attribute{{Name: testField}}},
			want: []string{`"guest_due_at"`, "TICKETBRIDGE_ZAMMAD_DUE_ATTRIBUTE", "Date & Time", "Allow past", "Update Database"}},
		{name: "NoDueAttributeNoneConfigured", opts: zammadfake.Options{Attributes: []zammadfake.Attribute{{Name: testField}}},
			cfg: func(c *zammad.Config) { c.DueAttribute = "" }},
		{name: "DueAttributeNotDatetime", opts: zammadfake.Options{Attributes: []zammadfake.Attribute{{Name: testField}, {Name: testDue}}},
			want: []string{`"input"`, "Date & Time"}},
		{name: "DueAttributeRefusesPast", opts: zammadfake.Options{Attributes: []zammadfake.Attribute{{Name: testField}, {Name: testDue, DataType: "datetime", RefusePast: true}}},
			want: []string{"Allow past is off", "refuses every update"}},
		{name: "DueAttributeRefusesFuture", opts: zammadfake.Options{Attributes: []zammadfake.Attribute{{Name: testField}, {Name: testDue, DataType: "datetime", RefuseFuture: true}}},
			want: []string{"Allow future is off"}},
		{name: "NoAdminObjectDueAttributeMissing", opts: zammadfake.Options{Permissions: []string{zammadfake.PermTicketAgent}, Attributes: []zammadfake.Attribute{{Name: testField}}},
			setup: func(t *testing.T, e *env) { rawCreate(t, e) }, want: []string{`"guest_due_at"`, "DUE_ATTRIBUTE"}},
		{name: "NoAdminObjectAttributeMissing", opts: zammadfake.Options{Permissions: []string{zammadfake.PermTicketAgent}, Attributes: []zammadfake.Attribute{}},
			setup: func(t *testing.T, e *env) { rawCreate(t, e) }, want: []string{`"guest_request_id"`, "New Attribute"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.opts)
			if tc.setup != nil {
				tc.setup(t, e)
			}
			cfg := e.config()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			err := e.open(t, cfg, e.options()).Check(t.Context())
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Check: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Check passed")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Check: %v\nwant it to say %q", err, w)
				}
			}
			if tc.auth != errors.Is(err, adapters.ErrAuth) {
				t.Errorf("errors.Is(ErrAuth) = %v, want %v", !tc.auth, tc.auth)
			}
			if strings.Contains(err.Error(), testToken) {
				t.Errorf("the error shows the token")
			}
		})
	}
}

// rawCreate makes a ticket in the fake without the adapter.
func rawCreate(t *testing.T, e *env) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.url+"/api/v1/tickets", strings.NewReader(`{"title":"Walk-in","group":"Users","customer_id":"guess:walk-in@hotel.example"}`))
	req.Header.Set("Authorization", "Token token="+testToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create ticket: %d", resp.StatusCode)
	}
}

func TestMissingAttributeWritesNothing(t *testing.T) {
	for _, attrs := range [][]zammadfake.Attribute{{}, {{Name: testField, Pending: true}}} {
		e := newEnv(t, zammadfake.Options{Attributes: attrs})
		a := e.open(t, e.config(), e.options())
		_, err := a.EnsureTicket(t.Context(), tk("u-1"))
		if !errors.Is(err, adapters.ErrInvalid) || !strings.Contains(err.Error(), "New Attribute") {
			t.Errorf("attributes %+v: EnsureTicket: %v, want ErrInvalid saying what to create", attrs, err)
		}
		if n := len(e.fake.Tickets()); n != 0 {
			t.Errorf("attributes %+v: %d tickets made, want none", attrs, n)
		}
	}
}

// waits records the adapter's waits between attempts.
type waits struct {
	mu sync.Mutex
	d  []time.Duration
}

func (w *waits) sleep(ctx context.Context, d time.Duration) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.d = append(w.d, d)
	return ctx.Err()
}

func TestRetriesReadsAfterRetryAfter(t *testing.T) {
	e := newEnv(t, zammadfake.Options{})
	w := &waits{}
	opts := e.options()
	opts.Sleep = w.sleep
	a := e.open(t, e.config(), opts)
	e.fake.Inject(zammadfake.Fault{Method: "GET", Path: "/api/v1/tickets/search", Status: http.StatusTooManyRequests, RetryAfter: 3 * time.Second})
	e.fake.Inject(zammadfake.Fault{Method: "GET", Path: "/api/v1/tickets/search", Status: http.StatusBadGateway})
	if _, err := a.EnsureTicket(t.Context(), tk("u-1")); err != nil {
		t.Fatalf("EnsureTicket after a 429 and a 502: %v", err)
	}
	if len(w.d) != 2 || w.d[0] != 3*time.Second {
		t.Errorf("waits %v, want Retry-After's 3s, then a backoff", w.d)
	}
	if n := len(e.fake.Tickets()); n != 1 {
		t.Errorf("%d tickets, want 1", n)
	}
	if strings.Contains(e.logs.String(), testToken) || !strings.Contains(e.logs.String(), "retrying") {
		t.Errorf("retry log (want retries logged, without the token):\n%s", e.logs.String())
	}
}

func TestWritesAreSentOnceAndFoundAgain(t *testing.T) {
	e := newEnv(t, zammadfake.Options{})
	a := e.open(t, e.config(), e.options())

	// The creation's answer is lost: the call fails, nothing is sent twice,
	// and the next call finds the ticket at once (no index lag).
	e.fake.Inject(zammadfake.Fault{Method: "POST", Path: "/api/v1/tickets", Status: http.StatusBadGateway, AfterApply: true})
	if _, err := a.EnsureTicket(t.Context(), tk("u-1")); err == nil || errors.Is(err, adapters.ErrInvalid) {
		t.Fatalf("EnsureTicket with a lost answer: %v, want a temporary error", err)
	}
	ref, id := mustEnsure(t, a, tk("u-1"))
	if n := len(e.fake.Tickets()); n != 1 {
		t.Fatalf("%d tickets after a lost answer and a retry, want 1", n)
	}

	// The same for an article.
	m := msg("m-1", "Could they be blue?", true)
	e.fake.Inject(zammadfake.Fault{Method: "POST", Path: "/api/v1/ticket_articles", Status: http.StatusBadGateway, AfterApply: true})
	if _, err := a.Append(t.Context(), ref, []adapters.Message{m}); err == nil {
		t.Fatal("Append with a lost answer succeeded")
	}
	got, err := a.Append(t.Context(), ref, []adapters.Message{m})
	if err != nil || len(got) != 1 || !got[0].Existed {
		t.Fatalf("Append again = %+v, %v; want the article found by its marker", got, err)
	}
	if snap, _ := e.fake.Ticket(id); len(snap.Articles) != 2 {
		t.Errorf("%d articles, want the request and one message", len(snap.Articles))
	}

	// A 500 on a creation is not repeated within the call.
	e.fake.Inject(zammadfake.Fault{Method: "POST", Path: "/api/v1/ticket_articles", Status: http.StatusInternalServerError})
	_, err = a.Append(t.Context(), ref, []adapters.Message{msg("m-2", "Thanks", true)})
	var herr *adapters.HTTPError
	if !errors.As(err, &herr) || !(herr.Class == httpretry.Retryable) || herr.Attempts != 1 {
		t.Errorf("Append on a 500: %v, want a temporary error after one attempt", err)
	}
	posts := 0
	for _, r := range e.fake.Requests() {
		if r.Method == "POST" {
			posts++
		}
	}
	if posts != 3 {
		t.Errorf("%d POSTs, want 3: the ticket, the article whose answer was lost, the article that met a 500", posts)
	}
}

func TestErrorsNeverShowTheToken(t *testing.T) {
	// A server that echoes the request's credentials in every answer.
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":"bad %s","error_human":"token %s"}`, r.Header.Get("Authorization"), strings.TrimPrefix(r.Header.Get("Authorization"), "Token token="))
	}))
	t.Cleanup(echo.Close)
	e := newEnv(t, zammadfake.Options{})
	cfg := e.config()
	cfg.URL = adapters.ParseURL(echo.URL)
	opts := e.options()
	opts.HTTP = echo.Client()
	a := e.open(t, cfg, opts)
	var errs []error
	errs = append(errs, a.Check(t.Context()))
	_, err := a.EnsureTicket(t.Context(), tk("u-1"))
	errs = append(errs, err)
	_, _, err = a.Changes(t.Context(), "")
	errs = append(errs, err)
	_, _, err = a.Lookup(t.Context(), "u-1")
	errs = append(errs, err)
	for _, err := range errs {
		if err == nil || !errors.Is(err, adapters.ErrAuth) {
			t.Errorf("error %v, want ErrAuth", err)
			continue
		}
		if strings.Contains(err.Error(), testToken) || strings.Contains(fmt.Sprintf("%+v %#v", err, err), testToken) {
			t.Errorf("the error shows the token: %v", err)
		}
	}
	if strings.Contains(e.logs.String(), testToken) {
		t.Errorf("the log shows the token:\n%s", e.logs.String())
	}
}

func TestChangesPagesThroughManyTickets(t *testing.T) {
	e := newEnv(t, zammadfake.Options{MaxPerPage: 2})
	cfg := e.config()
	cfg.PageSize = 2
	opts := e.options()
	opts.MaxEvents = 3
	a := e.open(t, cfg, opts)
	_, start := drain(t, a, "")
	anna := e.agent("Anna Lopez")
	var want []string
	for i := range 7 {
		_, id := mustEnsure(t, a, tk(fmt.Sprintf("u-%d", i)))
		body := fmt.Sprintf("Reply %d", i)
		if _, err := e.fake.Reply(id, anna, body); err != nil {
			t.Fatal(err)
		}
		want = append(want, body)
	}
	// A ticket that mirrors no guest request is not reported.
	rawCreate(t, e)
	evs, _ := drain(t, a, start)
	var got []string
	for _, ev := range evs {
		got = append(got, ev.Body)
		if ev.Kind != adapters.EventReply || ev.AuthorName != "Anna Lopez" {
			t.Errorf("event %+v", ev)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("replies %v, want %v in order, once each", got, want)
	}
}

func TestChangesReadsStateHistory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newBubbleEnv(t, zammadfake.Options{})
		a := e.open(t, e.config(), e.options())
		_, id := mustEnsure(t, a, tk("u-1"))
		_, cur := drain(t, a, "")
		anna := e.agent("Anna Lopez")
		// Two changes between two polls are two events; merged is not mapped;
		// the scheduler's close of a pending close ticket is Zammad's own.
		for _, st := range []string{"open", "pending reminder", "merged", "pending close"} {
			if err := e.fake.SetState(id, anna, st); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(25 * time.Hour)
		if n := e.fake.AutoClose(); n != 1 {
			t.Fatalf("AutoClose: %d", n)
		}
		evs, _ := drain(t, a, cur)
		var got []string
		for _, ev := range evs {
			got = append(got, fmt.Sprintf("%s:%s:%s", ev.Kind, ev.Status, ev.AuthorName))
		}
		want := []string{"status:in_progress:Anna Lopez", "status:in_progress:Anna Lopez", "status:done:Anna Lopez", "status:done:Zammad"}
		if !slices.Equal(got, want) {
			t.Errorf("events %v, want %v", got, want)
		}
	})
}

func TestChangesSkipsOwnCustomerAndSystemArticles(t *testing.T) {
	e := newEnv(t, zammadfake.Options{})
	a := e.open(t, e.config(), e.options())
	ref, id := mustEnsure(t, a, tk("u-1"))
	_, cur := drain(t, a, "")
	if _, err := a.Append(t.Context(), ref, []adapters.Message{msg("m-1", "Hello", true)}); err != nil {
		t.Fatal(err)
	}
	customer, _ := e.fake.FindUser(testCustomer)
	anna := e.agent("Anna Lopez")
	for _, u := range []zammadfake.AgentUpdate{
		{Body: "A mail from the customer address", Sender: zammadfake.SenderCustomer},
		{Body: "Auto reply", Sender: zammadfake.SenderSystem},
		{Body: "   ", HTML: true}, // nothing to say
	} {
		by := customer.ID
		if u.Sender == "" {
			by = anna
		}
		if _, err := e.fake.Update(id, by, u); err != nil {
			t.Fatal(err)
		}
	}
	// An agent quoting the bridge's marker is still an agent.
	quoted := "As the guest wrote:\n[ticketbridge message m-2]"
	if _, err := e.fake.Update(id, anna, zammadfake.AgentUpdate{Body: quoted}); err != nil {
		t.Fatal(err)
	}
	evs, _ := drain(t, a, cur)
	if len(evs) != 1 || evs[0].Body != quoted || evs[0].Kind != adapters.EventReply {
		t.Fatalf("events %+v, want only the agent's reply", evs)
	}
	f, ok, err := a.Lookup(t.Context(), "u-1")
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if _, fake := f.Messages["m-2"]; fake || len(f.Messages) != 1 {
		t.Errorf("Lookup messages %v: a marker quoted by an agent passed for the bridge's", f.Messages)
	}
}

func TestCursorForgetsOldEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newBubbleEnv(t, zammadfake.Options{})
		a := e.open(t, e.config(), e.options())
		_, id := mustEnsure(t, a, tk("u-1"))
		_, cur := drain(t, a, "")
		if _, err := e.fake.Reply(id, e.agent("Anna"), "On it."); err != nil {
			t.Fatal(err)
		}
		evs, cur := drain(t, a, cur)
		if len(evs) != 1 || !strings.Contains(string(cur), evs[0].ID) {
			t.Fatalf("events %+v, cursor %q: want the reply, named in the cursor", evs, cur)
		}
		time.Sleep(3 * time.Minute)
		evs, cur = drain(t, a, cur)
		if len(evs) != 0 || strings.Contains(string(cur), "article-") {
			t.Errorf("three minutes later: events %+v, cursor %q; want none, and the reply forgotten", evs, cur)
		}
		// A fresh instance from the old cursor, and from the empty one.
		if evs, _ := drain(t, e.open(t, e.config(), e.options()), cur); len(evs) != 0 {
			t.Errorf("fresh instance: %+v", evs)
		}
		if evs, _ := drain(t, e.open(t, e.config(), e.options()), ""); len(evs) != 1 {
			t.Errorf("from the beginning: %d events, want the reply", len(evs))
		}
		for _, bad := range []adapters.Cursor{"zd1:5:", "zm1:x:", "zm1:5:comment-3", "zm1:-1:", "zm1:5"} {
			if _, _, err := a.Changes(t.Context(), bad); !errors.Is(err, adapters.ErrInvalid) {
				t.Errorf("Changes(%q): %v, want ErrInvalid", bad, err)
			}
		}
	})
}

func TestEventsSince(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newBubbleEnv(t, zammadfake.Options{})
		a := e.open(t, e.config(), e.options())
		_, id := mustEnsure(t, a, tk("u-1"))
		if _, err := e.fake.Reply(id, e.agent("Anna"), "Old reply"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(48 * time.Hour)
		if _, err := e.fake.Reply(id, e.agent("Anna"), "New reply"); err != nil {
			t.Fatal(err)
		}
		cfg := e.config()
		cfg.EventsSince = saas.SinceOf(time.Now().Add(-24 * time.Hour))
		evs, _ := drain(t, e.open(t, cfg, e.options()), "")
		if len(evs) != 1 || evs[0].Body != "New reply" {
			t.Errorf("events since a day ago: %+v, want only the new reply", evs)
		}
	})
}

func TestGuestMessageReopens(t *testing.T) {
	e := newEnv(t, zammadfake.Options{})
	a := e.open(t, e.config(), e.options())
	ref, id := mustEnsure(t, a, tk("u-1"))
	_, cur := drain(t, a, "")
	if err := a.SetStatus(t.Context(), ref, guestapi.StatusDone); err != nil {
		t.Fatal(err)
	}
	staff := msg("m-1", "Checked by the night shift", false)
	staff.AuthorType = guestapi.AuthorStaff
	if _, err := a.Append(t.Context(), ref, []adapters.Message{staff}); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.fake.Ticket(id); got.State != "closed" {
		t.Errorf("an internal staff message changed the state to %q", got.State)
	}
	if _, err := a.Append(t.Context(), ref, []adapters.Message{msg("m-2", "The towels never came", true)}); err != nil {
		t.Fatal(err)
	}
	got, _ := e.fake.Ticket(id)
	if got.State != "open" || !strings.Contains(got.Articles[len(got.Articles)-1].Body, "The towels never came") {
		t.Errorf("after the guest's message: state %q, last article %q", got.State, got.Articles[len(got.Articles)-1].Body)
	}
	if evs, _ := drain(t, a, cur); len(evs) != 0 {
		t.Errorf("the reopen was reported: %+v", evs)
	}
}

func TestPendingStatesGetPendingTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newBubbleEnv(t, zammadfake.Options{})
		cfg := e.config()
		cfg.PendingFor = 6 * time.Hour
		a, err := zammad.New(cfg, adapters.Deps{StatusToHelpdesk: map[guestapi.Status]string{guestapi.StatusDone: "pending close"}}, e.options())
		if err != nil {
			t.Fatal(err)
		}
		ref, id := mustEnsure(t, a, tk("u-1"))
		if err := a.SetStatus(t.Context(), ref, guestapi.StatusDone); err != nil {
			t.Fatalf("SetStatus to a pending state: %v", err)
		}
		got, _ := e.fake.Ticket(id)
		if got.State != "pending close" || got.PendingTime == nil || !got.PendingTime.Equal(time.Now().Add(6*time.Hour)) {
			t.Errorf("state %q, pending till %v; want pending close six hours ahead", got.State, got.PendingTime)
		}
		// Upstream back to new: agents cannot set new again, neither can the
		// bridge; it counts as open.
		if err := a.SetStatus(t.Context(), ref, guestapi.StatusNew); err != nil {
			t.Fatal(err)
		}
		if got, _ := e.fake.Ticket(id); got.State != "open" {
			t.Errorf("state %q after upstream new, want open", got.State)
		}
	})
}

func TestSetStatusKeepsAnEquivalentState(t *testing.T) {
	e := newEnv(t, zammadfake.Options{})
	a := e.open(t, e.config(), e.options())
	ref, id := mustEnsure(t, a, tk("u-1"))
	if err := e.fake.SetState(id, e.agent("Anna"), "pending reminder"); err != nil {
		t.Fatal(err)
	}
	before := len(e.fake.Requests())
	if err := a.SetStatus(t.Context(), ref, guestapi.StatusInProgress); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.fake.Ticket(id); got.State != "pending reminder" {
		t.Errorf("in_progress replaced the agent's pending reminder with %q", got.State)
	}
	for _, r := range e.fake.Requests()[before:] {
		if r.Method != "GET" {
			t.Errorf("SetStatus wrote: %s %s", r.Method, r.Path)
		}
	}
}

// TestSearchIgnoringItsConditionIsRefused puts a proxy before the fake
// that drops the search's condition, as a Zammad that did not apply it
// would: the adapter must neither adopt a foreign ticket nor make a
// second one.
func TestSearchIgnoringItsConditionIsRefused(t *testing.T) {
	e := newEnv(t, zammadfake.Options{})
	a := e.open(t, e.config(), e.options())
	mustEnsure(t, a, tk("u-1"))
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		for k := range q {
			if strings.HasPrefix(k, "condition[") {
				q.Del(k)
			}
		}
		r.URL.RawQuery = q.Encode()
		e.fake.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	cfg := e.config()
	cfg.URL = adapters.ParseURL(proxy.URL)
	opts := e.options()
	opts.HTTP = proxy.Client()
	b := e.open(t, cfg, opts)
	if _, ok, err := b.Lookup(t.Context(), "u-2"); ok || !errors.Is(err, adapters.ErrInvalid) {
		t.Errorf("Lookup(u-2) through the proxy = %v, %v; want ErrInvalid, not the ticket of u-1", ok, err)
	}
	if _, err := b.EnsureTicket(t.Context(), tk("u-2")); !errors.Is(err, adapters.ErrInvalid) {
		t.Errorf("EnsureTicket(u-2) through the proxy: %v, want ErrInvalid", err)
	}
	if n := len(e.fake.Tickets()); n != 1 {
		t.Errorf("%d tickets, want 1", n)
	}
}

// TestChangesSkipsADeletedTicket deletes a ticket between the search and
// the read of its articles: the others are still reported.
func TestChangesSkipsADeletedTicket(t *testing.T) {
	e := newEnv(t, zammadfake.Options{})
	a := e.open(t, e.config(), e.options())
	_, gone := mustEnsure(t, a, tk("u-1"))
	_, kept := mustEnsure(t, a, tk("u-2"))
	_, cur := drain(t, a, "")
	anna := e.agent("Anna")
	for _, id := range []int64{gone, kept} {
		if _, err := e.fake.Reply(id, anna, fmt.Sprintf("Reply on %d", id)); err != nil {
			t.Fatal(err)
		}
	}
	e.fake.Inject(zammadfake.Fault{Method: "GET", Path: fmt.Sprintf("/api/v1/ticket_articles/by_ticket/%d", gone), Status: http.StatusNotFound})
	evs, next, err := a.Changes(t.Context(), cur)
	if err != nil || len(evs) != 1 || evs[0].Body != fmt.Sprintf("Reply on %d", kept) {
		t.Fatalf("Changes = %+v, %v; want only the reply on the ticket still there", evs, err)
	}
	// The fake answered 404 once but still has the ticket: within the
	// cursor's overlap the next call reads it again and loses nothing.
	evs, _ = drain(t, a, next)
	if len(evs) != 1 || evs[0].Body != fmt.Sprintf("Reply on %d", gone) {
		t.Errorf("next calls: %+v, want the other reply once", evs)
	}
}

// TestChangesLateCommit: a reply whose time lies before the last poll but
// that became visible only after it (a write committed late, or clocks a
// little apart) is still reported, once: the cursor looks back past its
// watermark and names what it reported there.
func TestChangesLateCommit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newBubbleEnv(t, zammadfake.Options{})
		a := e.open(t, e.config(), e.options())
		_, id := mustEnsure(t, a, tk("u-1"))
		time.Sleep(5 * time.Minute)
		_, cur := drain(t, a, "")
		var err error
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
