package zendesk_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/saas"
	"github.com/ticketbridge/ticketbridge/adapters/zendesk"
	"github.com/ticketbridge/ticketbridge/adapters/zendesk/zendeskfake"
	"github.com/ticketbridge/ticketbridge/guestapi"
)

func upstreamTicket(id string) adapters.Ticket {
	return adapters.Ticket{
		UpstreamID: id, Department: "housekeeping", Status: guestapi.StatusNew,
		TaskDescription: "Two extra towels for room 214\nplease before noon", Origin: guestapi.OriginGuest,
		CreatedAt: time.Date(2026, 3, 14, 8, 0, 0, 0, time.UTC),
	}
}

func guestMsg(id, body string) adapters.Message {
	return adapters.Message{
		UpstreamID: id, AuthorType: guestapi.AuthorGuest, AuthorName: "Ada Guest", Body: body, Public: true,
		CreatedAt: time.Date(2026, 3, 14, 8, 30, 0, 0, time.UTC),
	}
}

func mustRef(t testing.TB, ref adapters.Ref) int64 {
	t.Helper()
	id, err := strconv.ParseInt(string(ref), 10, 64)
	if err != nil {
		t.Fatalf("Ref %q is not a ticket id", ref)
	}
	return id
}

// count returns how many requests of method on paths starting with prefix
// the fake received.
func count(f *zendeskfake.Server, method, prefix string) int {
	n := 0
	for _, r := range f.Requests() {
		if r.Method == method && strings.HasPrefix(r.Path, prefix) {
			n++
		}
	}
	return n
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	if err := os.WriteFile(file, []byte("  file-token-123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := map[string]string{
		"TICKETBRIDGE_ZENDESK_URL":   "https://hotel.zendesk.com/api/v2/",
		"TICKETBRIDGE_ZENDESK_EMAIL": "bridge@hotel.example",
	}
	with := func(kv ...string) envconfig.Lookuper {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return envconfig.MapLookuper(m)
	}
	cfg, err := zendesk.LoadConfig(t.Context(), with("TICKETBRIDGE_ZENDESK_TOKEN_FILE", file, "TICKETBRIDGE_ZENDESK_GROUPS", "housekeeping=11, spa=12"))
	if err != nil {
		t.Fatalf("LoadConfig: %v", err)
	}
	if cfg.Token != "file-token-123" || cfg.Timeout != 30*time.Second || cfg.PageSize != 100 || cfg.Tag != "ticketbridge" {
		t.Errorf("config %+v: want the file's token and the defaults", cfg)
	}

	for _, tc := range []struct {
		name string
		env  envconfig.Lookuper
		want string
	}{
		{"no token", with(), "TICKETBRIDGE_ZENDESK_TOKEN is not set"},
		{"both tokens", with("TICKETBRIDGE_ZENDESK_TOKEN", "t", "TICKETBRIDGE_ZENDESK_TOKEN_FILE", file), "both set"},
		{"missing file", with("TICKETBRIDGE_ZENDESK_TOKEN_FILE", filepath.Join(dir, "nope")), "TOKEN_FILE"},
		{"plain http", with("TICKETBRIDGE_ZENDESK_TOKEN", "t", "TICKETBRIDGE_ZENDESK_URL", "http://hotel.zendesk.com"), "use https"},
		{"credentials in url", with("TICKETBRIDGE_ZENDESK_TOKEN", "t", "TICKETBRIDGE_ZENDESK_URL", "https://a:b@hotel.zendesk.com"), "carries credentials"},
		{"no email", with("TICKETBRIDGE_ZENDESK_TOKEN", "t", "TICKETBRIDGE_ZENDESK_EMAIL", ""), "EMAIL is not set"},
		{"bad group", with("TICKETBRIDGE_ZENDESK_TOKEN", "t", "TICKETBRIDGE_ZENDESK_GROUPS", "spa=abc"), "not a Zendesk group id"},
		{"bad since", with("TICKETBRIDGE_ZENDESK_TOKEN", "t", "TICKETBRIDGE_ZENDESK_EVENTS_SINCE", "yesterday"), "EVENTS_SINCE"},
		{"page size", with("TICKETBRIDGE_ZENDESK_TOKEN", "t", "TICKETBRIDGE_ZENDESK_PAGE_SIZE", "500"), "PAGE_SIZE"},
		{"token with space", with("TICKETBRIDGE_ZENDESK_TOKEN", "secret-part other"), "white space"},
	} {
		_, err := zendesk.LoadConfig(t.Context(), tc.env)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.name, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret-part") {
			t.Errorf("%s: the error shows the token: %v", tc.name, err)
		}
	}
	if _, err := zendesk.LoadConfig(t.Context(), with("TICKETBRIDGE_ZENDESK_TOKEN", "t", "TICKETBRIDGE_ZENDESK_URL", "http://127.0.0.1:8080")); err != nil {
		t.Errorf("plain http on loopback: %v", err)
	}
}

func TestNoSecretInStringsErrorsAndLogs(t *testing.T) {
	e := newEnv(t, zendeskfake.Options{})
	cfg := e.config()
	for _, s := range []string{fmt.Sprint(cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg), fmt.Sprintf("%v", &cfg)} {
		if strings.Contains(s, testToken) {
			t.Errorf("the configuration prints its token: %s", s)
		}
	}
	var logged strings.Builder
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("config", "zendesk", cfg)
	if strings.Contains(logged.String(), testToken) || !strings.Contains(logged.String(), "[redacted]") {
		t.Errorf("the configuration logs its token or not its shape: %s", logged.String())
	}

	a := e.open(t, cfg)
	if strings.Contains(a.String(), testToken) {
		t.Errorf("the adapter prints its token: %s", a)
	}
	// Retried failures are logged; the answers echo the credentials.
	echo := `{"error":"boom","description":"Authorization: Basic ` + testToken + `"}`
	e.fake.Inject(zendeskfake.Fault{Method: "GET", Status: 503, Body: echo, Times: 10})
	_, _, err := a.Lookup(t.Context(), "up-1")
	if err == nil {
		t.Fatal("Lookup through a failing Zendesk succeeded")
	}
	if strings.Contains(err.Error(), testToken) {
		t.Errorf("the error shows the token: %v", err)
	}
	if !strings.Contains(e.logs.String(), "retrying") {
		t.Errorf("no retry was logged, so the log check proves nothing: %q", e.logs.String())
	}
	if strings.Contains(e.logs.String(), testToken) {
		t.Errorf("the log shows the token:\n%s", e.logs.String())
	}

	e.fake.ClearFaults()
	bad := cfg
	bad.Token = "wrong-token-abcdef"
	b := e.open(t, bad)
	err = b.Check(t.Context())
	if !errors.Is(err, adapters.ErrAuth) || !strings.Contains(err.Error(), "TICKETBRIDGE_ZENDESK_TOKEN") {
		t.Errorf("Check with a wrong token: %v, want ErrAuth naming the variable", err)
	}
	if strings.Contains(err.Error(), bad.Token.Reveal()) {
		t.Errorf("Check's error shows the token: %v", err)
	}
	if _, err := b.EnsureTicket(t.Context(), upstreamTicket("up-2")); !errors.Is(err, adapters.ErrAuth) || strings.Contains(err.Error(), bad.Token.Reveal()) {
		t.Errorf("EnsureTicket with a wrong token: %v", err)
	}
}

func TestCheck(t *testing.T) {
	e := newEnv(t, zendeskfake.Options{})
	group := e.fake.AddGroup("Housekeeping")
	cfg := e.config()
	cfg.Groups = zendesk.Groups{"housekeeping": group}
	if err := e.open(t, cfg).Check(t.Context()); err != nil {
		t.Fatalf("Check: %v", err)
	}
	cfg.Group = 424242
	if err := e.open(t, cfg).Check(t.Context()); err == nil || !strings.Contains(err.Error(), "TICKETBRIDGE_ZENDESK_GROUP") {
		t.Errorf("Check with an unknown group: %v", err)
	}
	agentOnly := newEnv(t, zendeskfake.Options{Role: "agent"})
	if err := agentOnly.open(t, agentOnly.config()).Check(t.Context()); err == nil || !strings.Contains(err.Error(), "admin") {
		t.Errorf("Check as an agent: %v, want an error asking for an admin", err)
	}
}

func TestEnsureTicketShapeAndIdempotencyKey(t *testing.T) {
	e := newEnv(t, zendeskfake.Options{})
	group := e.fake.AddGroup("Housekeeping")
	cfg := e.config()
	cfg.Groups = zendesk.Groups{"housekeeping": group}
	a := e.open(t, cfg)
	// The first answer is lost after the ticket was made; the retry with
	// the same key gets it back.
	e.fake.Inject(zendeskfake.Fault{Method: "POST", Path: "/api/v2/tickets", Status: 502, AfterApply: true})
	ref, err := a.EnsureTicket(t.Context(), upstreamTicket("up-1"))
	if err != nil {
		t.Fatalf("EnsureTicket: %v", err)
	}
	if n := len(e.fake.Tickets()); n != 1 {
		t.Fatalf("%d tickets after a creation whose answer was lost, want 1", n)
	}
	var keys []string
	for _, r := range e.fake.Requests() {
		if r.Method == "POST" {
			keys = append(keys, r.IdempotencyKey)
		}
	}
	if len(keys) != 2 || keys[0] == "" || keys[0] != keys[1] {
		t.Errorf("Idempotency-Keys of the creation and its retry: %q, want one key twice", keys)
	}
	tk, _ := e.fake.Ticket(mustRef(t, ref))
	if tk.ExternalID != "ticketbridge:up-1" || tk.GroupID != group || !slices.Contains(tk.Tags, "ticketbridge") || tk.Status != "new" {
		t.Errorf("ticket %+v", tk)
	}
	if tk.Subject != "[housekeeping] Two extra towels for room 214" {
		t.Errorf("subject %q", tk.Subject)
	}
	desc := tk.Comments[0]
	if !desc.Public || !strings.HasPrefix(desc.Body, "Two extra towels for room 214\nplease before noon") || !strings.HasSuffix(desc.Body, "[ticketbridge ticket up-1]") {
		t.Errorf("description comment %+v", desc)
	}
	if count(e.fake, "PUT", "/api/v2/tickets") != 0 {
		t.Errorf("creating a ticket cost updates")
	}
}

func TestAppendSendsCommentsOnceAndRecoversByMarker(t *testing.T) {
	e := newEnv(t, zendeskfake.Options{})
	a := e.open(t, e.config())
	ref, err := a.EnsureTicket(t.Context(), upstreamTicket("up-1"))
	if err != nil {
		t.Fatal(err)
	}
	id := mustRef(t, ref)
	e.fake.ResetRequests()
	e.fake.Inject(zendeskfake.Fault{Method: "PUT", Path: "/api/v2/tickets/", Status: 503, AfterApply: true})
	m1, m2 := guestMsg("m-1", "Still waiting for the towels."), guestMsg("m-2", "Thanks!")
	if _, err := a.Append(t.Context(), ref, []adapters.Message{m1, m2}); err == nil || errors.Is(err, adapters.ErrInvalid) {
		t.Fatalf("Append whose answer was lost: %v, want a temporary error", err)
	}
	if n := count(e.fake, "PUT", "/api/v2/tickets/"); n != 1 {
		t.Errorf("the comment was sent %d times, want once", n)
	}
	got, err := a.Append(t.Context(), ref, []adapters.Message{m1, m2})
	if err != nil {
		t.Fatalf("second Append: %v", err)
	}
	if !got[0].Existed || got[1].Existed {
		t.Errorf("second Append = %+v, want m-1 found by its marker and m-2 added", got)
	}
	tk, _ := e.fake.Ticket(id)
	if len(tk.Comments) != 3 {
		t.Fatalf("%d comments, want the description and two messages", len(tk.Comments))
	}
	if want := "Ada Guest (guest), 2026-03-14 08:30 UTC\n\nStill waiting for the towels.\n\n[ticketbridge message m-1]"; tk.Comments[1].Body != want {
		t.Errorf("comment body %q, want %q", tk.Comments[1].Body, want)
	}
}

func TestMarkersOnlyFromTheBridgeAndOnTheLastLine(t *testing.T) {
	e := newEnv(t, zendeskfake.Options{})
	a := e.open(t, e.config())
	ref, err := a.EnsureTicket(t.Context(), upstreamTicket("up-1"))
	if err != nil {
		t.Fatal(err)
	}
	id := mustRef(t, ref)
	// An agent quotes a marker, and a guest pastes one into a message.
	if _, err := e.fake.Reply(id, e.agent("Anna"), "Quoting:\n[ticketbridge message m-2]"); err != nil {
		t.Fatal(err)
	}
	tricky := guestMsg("m-1", "I saw this in a mail:\n[ticketbridge message m-3]")
	if _, err := a.Append(t.Context(), ref, []adapters.Message{tricky}); err != nil {
		t.Fatal(err)
	}
	f, ok, err := e.open(t, e.config()).Lookup(t.Context(), "up-1")
	if err != nil || !ok {
		t.Fatalf("Lookup: %v %v", ok, err)
	}
	if len(f.Messages) != 1 || f.Messages["m-1"] == "" {
		t.Errorf("Lookup Messages %v, want only m-1", f.Messages)
	}
	got, err := a.Append(t.Context(), ref, []adapters.Message{guestMsg("m-2", "two"), guestMsg("m-3", "three")})
	if err != nil || got[0].Existed || got[1].Existed {
		t.Errorf("quoted markers made messages look present: %+v %v", got, err)
	}
}

func TestGuestMessageReopensSolvedTicketNoteDoesNot(t *testing.T) {
	e := newEnv(t, zendeskfake.Options{})
	a := e.open(t, e.config())
	ref, err := a.EnsureTicket(t.Context(), upstreamTicket("up-1"))
	if err != nil {
		t.Fatal(err)
	}
	id := mustRef(t, ref)
	if err := a.SetStatus(t.Context(), ref, guestapi.StatusDone); err != nil {
		t.Fatal(err)
	}
	note := adapters.Message{UpstreamID: "n-1", AuthorType: guestapi.AuthorStaff, AuthorName: "Front desk", Body: "closed by phone", Public: false}
	if _, err := a.Append(t.Context(), ref, []adapters.Message{note}); err != nil {
		t.Fatal(err)
	}
	if tk, _ := e.fake.Ticket(id); tk.Status != "solved" {
		t.Errorf("a staff note reopened the ticket: %s", tk.Status)
	}
	if _, err := a.Append(t.Context(), ref, []adapters.Message{guestMsg("m-1", "It is broken again")}); err != nil {
		t.Fatal(err)
	}
	if tk, _ := e.fake.Ticket(id); tk.Status != "open" {
		t.Errorf("a guest message left the ticket %s, want open", tk.Status)
	}
}

func TestSetStatusKeepsAgentsFinerStatusAndWritesLittle(t *testing.T) {
	e := newEnv(t, zendeskfake.Options{})
	a := e.open(t, e.config())
	ref, err := a.EnsureTicket(t.Context(), upstreamTicket("up-1"))
	if err != nil {
		t.Fatal(err)
	}
	id := mustRef(t, ref)
	if err := e.fake.SetStatus(id, e.agent("Anna"), "pending"); err != nil {
		t.Fatal(err)
	}
	e.fake.ResetRequests()
	for _, s := range []guestapi.Status{guestapi.StatusInProgress, guestapi.StatusInProgress} {
		if err := a.SetStatus(t.Context(), ref, s); err != nil {
			t.Fatal(err)
		}
	}
	if tk, _ := e.fake.Ticket(id); tk.Status != "pending" {
		t.Errorf("in_progress replaced the agent's pending with %s", tk.Status)
	}
	if n := count(e.fake, "PUT", "/api/v2/tickets/"); n != 0 {
		t.Errorf("%d updates for statuses the ticket already shows", n)
	}
	if err := a.SetStatus(t.Context(), ref, guestapi.StatusNew); err != nil {
		t.Fatalf("SetStatus(new) on a ticket that left new: %v", err)
	}
	if tk, _ := e.fake.Ticket(id); tk.Status != "open" {
		t.Errorf("new on a pending ticket gave %s, want open", tk.Status)
	}
}

func TestClosedTicketGetsAFollowUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newBubbleEnv(t, zendeskfake.Options{})
		a := e.open(t, e.config())
		ref, err := a.EnsureTicket(t.Context(), upstreamTicket("up-1"))
		if err != nil {
			t.Fatal(err)
		}
		root := mustRef(t, ref)
		if _, err := a.Append(t.Context(), ref, []adapters.Message{guestMsg("m-1", "first")}); err != nil {
			t.Fatal(err)
		}
		if err := a.SetStatus(t.Context(), ref, guestapi.StatusDone); err != nil {
			t.Fatal(err)
		}
		if err := e.fake.Close(root); err != nil {
			t.Fatal(err)
		}
		if err := a.SetStatus(t.Context(), ref, guestapi.StatusCompleted); err != nil {
			t.Fatalf("a closing status on a closed ticket: %v", err)
		}
		if n := len(e.fake.Tickets()); n != 1 {
			t.Fatalf("a closing status made a follow-up")
		}
		got, err := a.Append(t.Context(), ref, []adapters.Message{guestMsg("m-1", "first"), guestMsg("m-2", "the lamp again"), guestMsg("m-3", "and the kettle")})
		if err != nil {
			t.Fatalf("Append to a closed ticket: %v", err)
		}
		if !got[0].Existed || got[1].Existed || got[2].Existed {
			t.Errorf("Append = %+v", got)
		}
		ts := e.fake.Tickets()
		if len(ts) != 2 {
			t.Fatalf("%d tickets, want the closed one and one follow-up", len(ts))
		}
		fu := ts[1]
		if fu.ViaFollowupSourceID != root || fu.ExternalID != "ticketbridge:up-1" || fu.Status != "open" || len(fu.Comments) != 2 {
			t.Errorf("follow-up %+v", fu)
		}
		if !strings.Contains(fu.Comments[0].Body, "the lamp again") || !strings.Contains(fu.Comments[1].Body, "and the kettle") {
			t.Errorf("follow-up comments %q, %q", fu.Comments[0].Body, fu.Comments[1].Body)
		}

		// An agent answers on the follow-up: the event names the first ticket.
		e.settle(t)
		from := drain(t, a, "")
		if _, err := e.fake.Reply(fu.ID, e.agent("Anna"), "Sending someone up."); err != nil {
			t.Fatal(err)
		}
		e.settle(t)
		b := e.open(t, e.config())
		evs, _, err := b.Changes(t.Context(), from)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != 1 || evs[0].Ref != ref || evs[0].UpstreamTicketID != "up-1" || evs[0].Kind != adapters.EventReply {
			t.Fatalf("events %+v, want one reply on Ref %s", evs, ref)
		}
		if err := b.MarkSent(t.Context(), evs[0].Ref, evs[0].ID, "u-9"); err != nil {
			t.Fatal(err)
		}
		f, ok, err := e.open(t, e.config()).Lookup(t.Context(), "up-1")
		if err != nil || !ok || f.Ref != ref || len(f.Messages) != 3 || f.Sent[evs[0].ID] != "u-9" {
			t.Errorf("Lookup = %+v %v %v", f, ok, err)
		}
		// The upstream request reopened: the follow-up is open already, no
		// third ticket.
		if err := a.SetStatus(t.Context(), ref, guestapi.StatusAssigned); err != nil || len(e.fake.Tickets()) != 2 {
			t.Errorf("SetStatus(assigned) on the chain: %v, %d tickets", err, len(e.fake.Tickets()))
		}
	})
}

func TestReopenedWhileClosedMakesFollowUp(t *testing.T) {
	e := newEnv(t, zendeskfake.Options{})
	a := e.open(t, e.config())
	ref, err := a.EnsureTicket(t.Context(), upstreamTicket("up-1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.SetStatus(t.Context(), ref, guestapi.StatusDone); err != nil {
		t.Fatal(err)
	}
	if err := e.fake.Close(mustRef(t, ref)); err != nil {
		t.Fatal(err)
	}
	if err := a.SetStatus(t.Context(), ref, guestapi.StatusInProgress); err != nil {
		t.Fatal(err)
	}
	ts := e.fake.Tickets()
	if len(ts) != 2 || ts[1].Status != "open" || ts[1].Comments[0].Public || !strings.Contains(ts[1].Comments[0].Body, "reopened") {
		t.Fatalf("tickets after a reopen of a closed one: %+v", ts)
	}
}

// drain reads Changes from c until it runs dry and returns the cursor.
func drain(t *testing.T, a adapters.Helpdesk, c adapters.Cursor) adapters.Cursor {
	t.Helper()
	for range 100 {
		evs, next, err := a.Changes(t.Context(), c)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 0 && next == c {
			return c
		}
		c = next
	}
	t.Fatal("Changes does not run dry")
	return ""
}

func TestChangesLeavesOutOtherTicketsAndOldEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newBubbleEnv(t, zendeskfake.Options{})
		anna := e.agent("Anna")
		other := e.fake.CreateTicket(anna, "Printer", "The printer is on fire", "")
		foreign := e.fake.CreateTicket(anna, "CRM", "From the CRM", "crm:42")
		if _, err := e.fake.Reply(other, anna, "not ours"); err != nil {
			t.Fatal(err)
		}
		if _, err := e.fake.Reply(foreign, anna, "not ours either"); err != nil {
			t.Fatal(err)
		}
		a := e.open(t, e.config())
		ref, err := a.EnsureTicket(t.Context(), upstreamTicket("up-1"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.fake.Reply(mustRef(t, ref), anna, "ours"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Hour)
		if _, err := e.fake.Note(mustRef(t, ref), anna, "later note"); err != nil {
			t.Fatal(err)
		}
		e.settle(t)
		var all []adapters.Event
		c := adapters.Cursor("")
		for range 10 {
			evs, next, err := a.Changes(t.Context(), c)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, evs...)
			if len(evs) == 0 && next == c {
				break
			}
			c = next
		}
		if len(all) != 2 || all[0].Body != "ours" || all[0].AuthorName != "Anna" || all[1].Kind != adapters.EventNote {
			t.Fatalf("events %+v, want the reply and the note on the mirrored ticket", all)
		}

		cfg := e.config()
		cfg.EventsSince = saas.SinceOf(time.Now().Add(-30 * time.Minute))
		evs, _, err := e.open(t, cfg).Changes(t.Context(), "")
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != 1 || evs[0].Body != "later note" {
			t.Errorf("with EVENTS_SINCE half an hour ago: %+v, want only the later note", evs)
		}
		if _, _, err := a.Changes(t.Context(), "garbage"); !errors.Is(err, adapters.ErrInvalid) {
			t.Errorf("Changes with a foreign cursor: %v, want ErrInvalid", err)
		}
	})
}

func TestPagingReadsEveryPage(t *testing.T) {
	e := newEnv(t, zendeskfake.Options{MaxPageSize: 2})
	cfg := e.config()
	cfg.PageSize = 2
	a := e.open(t, cfg)
	ref, err := a.EnsureTicket(t.Context(), upstreamTicket("up-1"))
	if err != nil {
		t.Fatal(err)
	}
	var msgs []adapters.Message
	for i := range 7 {
		msgs = append(msgs, guestMsg(fmt.Sprintf("m-%d", i), fmt.Sprintf("message %d", i)))
	}
	if _, err := a.Append(t.Context(), ref, msgs); err != nil {
		t.Fatal(err)
	}
	e.fake.ResetRequests()
	f, ok, err := e.open(t, cfg).Lookup(t.Context(), "up-1")
	if err != nil || !ok || len(f.Messages) != 7 {
		t.Fatalf("Lookup over pages of two: %d messages, %v %v", len(f.Messages), ok, err)
	}
	pages := 0
	for _, r := range e.fake.Requests() {
		if strings.HasSuffix(r.Path, "/comments") {
			pages++
			if r.Query.Get("page[size]") != "2" {
				t.Errorf("comments asked with page[size]=%q", r.Query.Get("page[size]"))
			}
		}
	}
	if pages != 4 {
		t.Errorf("read %d comment pages for 8 comments in pages of 2, want 4", pages)
	}
}

func TestRateLimitedRequestsWaitRetryAfter(t *testing.T) {
	e := newEnv(t, zendeskfake.Options{})
	var waits []time.Duration
	opts := e.options()
	opts.Sleep = func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d)
		return nil
	}
	a, err := zendesk.New(e.config(), adapters.Deps{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	e.fake.Inject(zendeskfake.Fault{Method: "GET", Path: "/api/v2/tickets", Status: 429, RetryAfter: "7"})
	ref, err := a.EnsureTicket(t.Context(), upstreamTicket("up-1"))
	if err != nil {
		t.Fatalf("EnsureTicket after one 429: %v", err)
	}
	if !slices.Equal(waits, []time.Duration{7 * time.Second}) {
		t.Errorf("waits %v, want the 7 s of Retry-After", waits)
	}
	// A comment is never repeated within the call, a 429 included: the
	// error says how long Zendesk asked to wait.
	e.fake.Inject(zendeskfake.Fault{Method: "PUT", Path: "/api/v2/tickets", Status: 429, RetryAfter: "300"})
	_, err = a.Append(t.Context(), ref, []adapters.Message{guestMsg("m-1", "hello")})
	var herr *adapters.HTTPError
	if !errors.As(err, &herr) || herr.StatusCode != 429 || herr.RetryAfter != 5*time.Minute || errors.Is(err, adapters.ErrInvalid) {
		t.Fatalf("Append on 429: %v, want a temporary HTTPError asking for 5 minutes", err)
	}
	if _, err := a.Append(t.Context(), ref, []adapters.Message{guestMsg("m-1", "hello")}); err != nil {
		t.Fatalf("Append after the limit: %v", err)
	}
}

func TestTicketUpdateLimitIsTemporary(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newBubbleEnv(t, zendeskfake.Options{TicketUpdates: zendeskfake.RateLimit{Requests: 3, Window: 10 * time.Minute}})
		a := e.open(t, e.config())
		ref, err := a.EnsureTicket(t.Context(), upstreamTicket("up-1"))
		if err != nil {
			t.Fatal(err)
		}
		var msgs []adapters.Message
		for i := range 5 {
			msgs = append(msgs, guestMsg(fmt.Sprintf("m-%d", i), fmt.Sprintf("message %d", i)))
		}
		_, err = a.Append(t.Context(), ref, msgs)
		if err == nil || errors.Is(err, adapters.ErrInvalid) || !strings.Contains(err.Error(), "429") {
			t.Fatalf("Append over the per-ticket limit: %v, want a temporary 429", err)
		}
		time.Sleep(10 * time.Minute)
		got, err := a.Append(t.Context(), ref, msgs)
		if err != nil {
			t.Fatalf("Append after the window: %v", err)
		}
		existed := 0
		for _, g := range got {
			if g.Existed {
				existed++
			}
		}
		if existed != 3 {
			t.Errorf("%d messages were there from the first call, want 3", existed)
		}
		tk, _ := e.fake.Ticket(mustRef(t, ref))
		if len(tk.Comments) != 6 {
			t.Errorf("%d comments, want the description and 5 messages", len(tk.Comments))
		}
	})
}

// TestChangesWaitsForAMinuteOldStart: Zendesk refuses a start_time less
// than a minute old (400). With EVENTS_SINCE just now, Changes reads
// nothing and keeps its cursor until the start is old enough, then
// reports what happened since.
func TestChangesWaitsForAMinuteOldStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newBubbleEnv(t, zendeskfake.Options{})
		anna := e.agent("Anna")
		cfg := e.config()
		a := e.open(t, cfg)
		ref, err := a.EnsureTicket(t.Context(), upstreamTicket("up-1"))
		if err != nil {
			t.Fatal(err)
		}
		cfg.EventsSince = saas.SinceOf(time.Now())
		b := e.open(t, cfg)
		if _, err := e.fake.Reply(mustRef(t, ref), anna, "just now"); err != nil {
			t.Fatal(err)
		}
		evs, next, err := b.Changes(t.Context(), "")
		if err != nil || len(evs) != 0 {
			t.Fatalf("Changes from a start_time of now: %v, %v; want nothing yet", evs, err)
		}
		e.settle(t)
		evs, _, err = b.Changes(t.Context(), next)
		if err != nil || len(evs) != 1 || evs[0].Body != "just now" {
			t.Fatalf("Changes a minute later: %+v, %v; want the reply", evs, err)
		}
	})
}

// TestSolveHeldForRequiredFields: an account with a field required on
// solve refuses status solved (422). The ticket stays open, the team is
// told once in an internal comment, SetStatus fails with a HeldError (not
// ErrInvalid, so the engine tries again) and Held lists it; once the
// field is filled in, the next SetStatus solves the ticket.
func TestSolveHeldForRequiredFields(t *testing.T) {
	e := newEnv(t, zendeskfake.Options{RequiredOnSolve: []zendeskfake.Field{{ID: 9001, Title: "Room number"}}})
	a := e.open(t, e.config())
	ref, err := a.EnsureTicket(t.Context(), upstreamTicket("up-1"))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		err = a.SetStatus(t.Context(), ref, guestapi.StatusDone)
		var held *adapters.HeldError
		if !errors.As(err, &held) || errors.Is(err, adapters.ErrInvalid) || !strings.Contains(held.Need, "Room number: is required when solving") {
			t.Fatalf("SetStatus done: %v, want a HeldError naming the field", err)
		}
	}
	tk, _ := e.fake.Ticket(mustRef(t, ref))
	notes := 0
	for _, c := range tk.Comments {
		if strings.Contains(c.Body, "refuses to solve") && !c.Public {
			notes++
		}
	}
	if tk.Status == "solved" || notes != 1 {
		t.Fatalf("ticket %s with %d internal comments about it, want it open with one", tk.Status, notes)
	}
	if h := a.Held(t.Context()); len(h) != 1 || h[0].Ref != ref {
		t.Fatalf("Held: %+v", h)
	}
	// The guest reopens: nothing is held any more, and the next done is
	// held again.
	if err := a.SetStatus(t.Context(), ref, guestapi.StatusInProgress); err != nil {
		t.Fatal(err)
	}
	if h := a.Held(t.Context()); len(h) != 0 {
		t.Fatalf("Held after in_progress: %+v", h)
	}
	var held *adapters.HeldError
	if err := a.SetStatus(t.Context(), ref, guestapi.StatusDone); !errors.As(err, &held) {
		t.Fatalf("SetStatus done again: %v", err)
	}
	if err := e.fake.SetField(mustRef(t, ref), 9001, "214"); err != nil {
		t.Fatal(err)
	}
	if err := a.SetStatus(t.Context(), ref, guestapi.StatusDone); err != nil {
		t.Fatalf("SetStatus once the field is filled: %v", err)
	}
	if tk, _ := e.fake.Ticket(mustRef(t, ref)); tk.Status != "solved" {
		t.Errorf("status %s, want solved", tk.Status)
	}
	if h := a.Held(t.Context()); len(h) != 0 {
		t.Errorf("Held after the change went through: %+v", h)
	}
}

// TestArchivedTicketFound: Zendesk archives closed tickets and List
// Tickets leaves them out. After a state loss the adapter still finds an
// archived ticket (through the Search API) with the messages it holds, so
// EnsureTicket makes no second ticket, a repeated message is not written
// again, and a new guest message goes to a follow-up linked to it.
func TestArchivedTicketFound(t *testing.T) {
	e := newEnv(t, zendeskfake.Options{})
	a := e.open(t, e.config())
	up := upstreamTicket("up-1")
	ref, err := a.EnsureTicket(t.Context(), up)
	if err != nil {
		t.Fatal(err)
	}
	old := guestMsg("m-1", "first")
	if _, err := a.Append(t.Context(), ref, []adapters.Message{old}); err != nil {
		t.Fatal(err)
	}
	id := mustRef(t, ref)
	if err := e.fake.SetStatus(id, e.agent("Anna"), "solved"); err != nil {
		t.Fatal(err)
	}
	if err := e.fake.Close(id); err != nil {
		t.Fatal(err)
	}
	if err := e.fake.Archive(id); err != nil {
		t.Fatal(err)
	}
	b := e.open(t, e.config())
	f, ok, err := b.Lookup(t.Context(), up.UpstreamID)
	if err != nil || !ok || f.Ref != ref || f.Messages["m-1"] == "" {
		t.Fatalf("Lookup of an archived ticket: %+v, %v, %v", f, ok, err)
	}
	again, err := b.EnsureTicket(t.Context(), up)
	if err != nil || again != ref {
		t.Fatalf("EnsureTicket of an archived ticket: %s, %v; want %s", again, err, ref)
	}
	got, err := b.Append(t.Context(), ref, []adapters.Message{old, guestMsg("m-2", "back again")})
	if err != nil {
		t.Fatal(err)
	}
	if !got[0].Existed || got[1].Existed {
		t.Errorf("Append: %+v, want the first existing and the second new", got)
	}
	tickets := e.fake.Tickets()
	if len(tickets) != 2 || tickets[1].ViaFollowupSourceID != id || tickets[1].ExternalID != tickets[0].ExternalID {
		t.Fatalf("tickets %+v, want the archived one and one follow-up of it", tickets)
	}
}

// TestSecondLargerThanAPageIsPassed puts 250 agent replies into one second
// while an export page holds 100: Zendesk's time-based export then answers
// a page that starts and ends at that second, again and again. Every reply
// is reported once and the cursor goes on past the second.
func TestSecondLargerThanAPageIsPassed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newBubbleEnv(t, zendeskfake.Options{EventsPageSize: 100})
		a := e.open(t, e.config())
		var ids []int64
		for i := range 25 {
			ref, err := a.EnsureTicket(t.Context(), upstreamTicket(fmt.Sprintf("up-%d", i)))
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, mustRef(t, ref))
		}
		c := drain(t, a, "")
		time.Sleep(time.Hour)
		second := time.Now().Unix()
		anna := e.agent("Anna")
		for _, id := range ids {
			for j := range 10 {
				if _, err := e.fake.Reply(id, anna, fmt.Sprintf("bulk reply %d on %d", j, id)); err != nil {
					t.Fatal(err)
				}
			}
		}
		e.settle(t)
		e.fake.ResetRequests()
		seen := map[string]int{}
		for range 20 {
			evs, next, err := a.Changes(t.Context(), c)
			if err != nil {
				t.Fatal(err)
			}
			for _, ev := range evs {
				seen[ev.ID]++
			}
			if len(evs) == 0 && next == c {
				break
			}
			c = next
		}
		if len(seen) != 250 {
			t.Errorf("%d distinct events reported, want the 250 replies of one second", len(seen))
		}
		for id, n := range seen {
			if n != 1 {
				t.Errorf("event %s reported %d times", id, n)
			}
		}
		e.settle(t)
		if evs, _, err := a.Changes(t.Context(), c); err != nil || len(evs) != 0 {
			t.Fatalf("after the crowded second: %v %v, want nothing", evs, err)
		}
		var last int64
		for _, r := range e.fake.Requests() {
			if strings.HasSuffix(r.Path, "/incremental/ticket_events") {
				last, _ = strconv.ParseInt(r.Query.Get("start_time"), 10, 64)
			}
		}
		if last <= second {
			t.Errorf("the export is last asked from %d, want past the crowded second %d", last, second)
		}
	})
}
