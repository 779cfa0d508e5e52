package rt_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/rt"
	"github.com/ticketbridge/ticketbridge/guestapi"
)

// The tests in this file check what the conformance suite leaves to each
// adapter, against the real RT of deploy/dev/rt.sh.

func upTicket(dept string, st guestapi.Status) adapters.Ticket {
	return adapters.Ticket{
		UpstreamID: uuid.NewString(), Department: dept, Status: st,
		TaskDescription: "Extra pillows for room 12\nTwo, feather-free.", Origin: guestapi.OriginGuest,
		CreatedAt: time.Now().Add(-time.Hour), UpdatedAt: time.Now(),
	}
}

func guestMsg(body string, at time.Time) adapters.Message {
	return adapters.Message{UpstreamID: uuid.NewString(), AuthorType: guestapi.AuthorGuest, AuthorName: "Ada Guest", Body: body, Public: true, CreatedAt: at}
}

// rtTicket reads a ticket's status and queue name as the agent.
func (g *agent) ticket(t testing.TB, ref adapters.Ref) (status, queue string) {
	t.Helper()
	var tk struct {
		Status string
		Queue  struct{ Name string }
	}
	q := url.Values{"fields[Queue]": {"Name"}}
	if err := g.do(t.Context(), http.MethodGet, "/ticket/"+string(ref), q, nil, &tk); err != nil {
		t.Fatal(err)
	}
	return tk.Status, tk.Queue.Name
}

// head drains the adapter's changes and returns the cursor after them.
func head(t testing.TB, a adapters.Helpdesk) adapters.Cursor {
	t.Helper()
	var c adapters.Cursor
	for range 1000 {
		evs, next, err := a.Changes(t.Context(), c)
		if err != nil {
			t.Fatalf("Changes: %v", err)
		}
		if len(evs) == 0 && next == c {
			return c
		}
		c = next
	}
	t.Fatal("Changes did not run dry")
	return ""
}

// eventsOn returns the events after cursor on ref.
func eventsOn(t testing.TB, a adapters.Helpdesk, c adapters.Cursor, ref adapters.Ref) []adapters.Event {
	t.Helper()
	var out []adapters.Event
	for range 1000 {
		evs, next, err := a.Changes(t.Context(), c)
		if err != nil {
			t.Fatalf("Changes: %v", err)
		}
		for _, ev := range evs {
			if ev.Ref == ref {
				out = append(out, ev)
			}
		}
		if len(evs) == 0 && next == c {
			return out
		}
		c = next
	}
	t.Fatal("Changes did not run dry")
	return nil
}

func TestCheckSaysWhatToCreate(t *testing.T) {
	r := needRT(t)
	queue := r.queue(t, "check")
	missing := "Missing Field " + uuid.NewString()[:8]
	a := r.open(t, map[string]string{"TICKETBRIDGE_RT_QUEUE": queue, "TICKETBRIDGE_RT_QUEUES": "", "TICKETBRIDGE_RT_ID_FIELD": missing})
	err := a.Check(t.Context())
	if err == nil {
		t.Fatal("Check passed with a custom field RT does not have")
	}
	for _, want := range []string{`"` + missing + `"`, "TICKETBRIDGE_RT_ID_FIELD", "Admin → Custom Fields → Create", `Type "Enter one value"`, `Applies to "Tickets"`, `"` + queue + `"`, "SeeCustomField"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Check's error lacks %q:\n%v", want, err)
		}
	}
	if _, err := a.EnsureTicket(t.Context(), upTicket("", guestapi.StatusNew)); err == nil {
		t.Error("EnsureTicket created a ticket although the custom field is missing")
	}

	nowhere := "No Such Queue " + uuid.NewString()[:8]
	b := r.open(t, map[string]string{"TICKETBRIDGE_RT_QUEUE": queue, "TICKETBRIDGE_RT_QUEUES": "spa=" + nowhere})
	err = b.Check(t.Context())
	if err == nil || !strings.Contains(err.Error(), `queue "`+nowhere+`"`) || !strings.Contains(err.Error(), "SeeQueue") {
		t.Errorf("Check with a queue RT lacks: %v", err)
	}
}

func TestCredentialsRefusedAndNeverShown(t *testing.T) {
	r := needRT(t)
	var logs bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	for name, override := range map[string]map[string]string{
		"token":    {"TICKETBRIDGE_RT_TOKEN": "1-31-00000000000000000000000000000000"},
		"password": {"TICKETBRIDGE_RT_TOKEN": "", "TICKETBRIDGE_RT_USER": "ticketbridge", "TICKETBRIDGE_RT_PASSWORD": "wrong-Password-4711"},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := r.config(t, override)
			a, err := rt.New(t.Context(), cfg, adapters.Deps{Logger: logger})
			if err != nil {
				t.Fatal(err)
			}
			err = a.Check(t.Context())
			if !errors.Is(err, adapters.ErrAuth) || !strings.Contains(err.Error(), "refused") {
				t.Fatalf("Check with wrong credentials: %v; want ErrAuth saying RT refused them", err)
			}
			for _, secret := range []string{cfg.Token.Reveal(), cfg.Password.Reveal()} {
				if secret == "" {
					continue
				}
				if strings.Contains(err.Error(), secret) {
					t.Errorf("the error shows the credential: %v", err)
				}
				mu.Lock()
				if strings.Contains(logs.String(), secret) {
					t.Errorf("the log shows the credential:\n%s", logs.String())
				}
				mu.Unlock()
			}
		})
	}
	// The working token never shows either, whatever the adapter logs.
	cfg := r.config(t, nil)
	a, err := rt.New(t.Context(), cfg, adapters.Deps{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Check(t.Context()); err != nil {
		t.Fatal(err)
	}
	ref, err := a.EnsureTicket(t.Context(), upTicket("", guestapi.StatusNew))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Append(t.Context(), ref, []adapters.Message{guestMsg("Hello", time.Now())}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, secret := range []string{cfg.Token.Reveal(), cfg.Password.Reveal()} {
		if secret != "" && strings.Contains(logs.String(), secret) {
			t.Errorf("the log shows the credential")
		}
	}
	for _, s := range []string{fmt.Sprint(cfg), slog.AnyValue(cfg).String()} {
		if cfg.Token != "" && strings.Contains(s, cfg.Token.Reveal()) {
			t.Errorf("the configuration's text shows the token: %s", s)
		}
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestUserAndPassword(t *testing.T) {
	r := needRT(t)
	user, pass := r.env["TICKETBRIDGE_RT_TEST_BRIDGE_USER"], r.env["TICKETBRIDGE_RT_TEST_BRIDGE_PASSWORD"]
	if user == "" || pass == "" {
		t.Skip("deploy/dev/rt.sh prints TICKETBRIDGE_RT_TEST_BRIDGE_USER and _PASSWORD; they are not set")
	}
	queue := r.queue(t, "basic")
	a := r.open(t, map[string]string{"TICKETBRIDGE_RT_TOKEN": "", "TICKETBRIDGE_RT_USER": user, "TICKETBRIDGE_RT_PASSWORD": pass, "TICKETBRIDGE_RT_QUEUE": queue, "TICKETBRIDGE_RT_QUEUES": ""})
	if err := a.Check(t.Context()); err != nil {
		t.Fatalf("Check with user and password: %v", err)
	}
	c0 := head(t, a)
	ref, err := a.EnsureTicket(t.Context(), upTicket("", guestapi.StatusNew))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Append(t.Context(), ref, []adapters.Message{guestMsg("Hello", time.Now())}); err != nil {
		t.Fatal(err)
	}
	if evs := eventsOn(t, a, c0, ref); len(evs) != 0 {
		t.Errorf("the bridge's own writes came back with basic authentication: %+v", evs)
	}
}

func TestDepartmentQueues(t *testing.T) {
	r := needRT(t)
	def, hk := r.queue(t, "default"), r.queue(t, "housekeeping")
	a := r.open(t, map[string]string{"TICKETBRIDGE_RT_QUEUE": def, "TICKETBRIDGE_RT_QUEUES": "housekeeping=" + hk})
	g := r.agent()
	for dept, want := range map[string]string{"housekeeping": hk, "HouseKeeping": hk, "maintenance": def, "": def} {
		ref, err := a.EnsureTicket(t.Context(), upTicket(dept, guestapi.StatusNew))
		if err != nil {
			t.Fatal(err)
		}
		if _, q := g.ticket(t, ref); q != want {
			t.Errorf("department %q: ticket in queue %q, want %q", dept, q, want)
		}
	}
}

func TestCommentsNotSentWhenOff(t *testing.T) {
	r := needRT(t)
	queue := r.queue(t, "nocomments")
	a := r.open(t, map[string]string{"TICKETBRIDGE_RT_QUEUE": queue, "TICKETBRIDGE_RT_QUEUES": "", "TICKETBRIDGE_RT_SEND_COMMENTS": "false"})
	ref, err := a.EnsureTicket(t.Context(), upTicket("", guestapi.StatusNew))
	if err != nil {
		t.Fatal(err)
	}
	c0 := head(t, a)
	g := r.agent()
	if err := g.Note(t.Context(), ref, "", "Internal: VIP guest."); err != nil {
		t.Fatal(err)
	}
	if err := g.Reply(t.Context(), ref, "", "On its way."); err != nil {
		t.Fatal(err)
	}
	evs := eventsOn(t, a, c0, ref)
	if len(evs) != 1 || evs[0].Kind != adapters.EventReply || evs[0].Body != "On its way." {
		t.Fatalf("with comments off: %+v; want the reply alone", evs)
	}
	if evs[0].AuthorName != "Alex Agent" {
		t.Errorf("the reply's author is %q, want the agent's real name", evs[0].AuthorName)
	}
}

func TestRichTextReplyAndAttachment(t *testing.T) {
	r := needRT(t)
	queue := r.queue(t, "html")
	a := r.open(t, map[string]string{"TICKETBRIDGE_RT_QUEUE": queue, "TICKETBRIDGE_RT_QUEUES": ""})
	ref, err := a.EnsureTicket(t.Context(), upTicket("", guestapi.StatusNew))
	if err != nil {
		t.Fatal(err)
	}
	c0 := head(t, a)
	g := r.agent()
	html := "<p>Dear Ada,</p><p>the <b>towels</b> are on their way &amp; the cot too.<br>Kind regards</p><ul><li>towels</li><li>cot</li></ul>"
	if err := g.do(t.Context(), http.MethodPost, "/ticket/"+string(ref)+"/correspond", nil,
		map[string]string{"Content": html, "ContentType": "text/html"}, nil); err != nil {
		t.Fatal(err)
	}
	photo := base64.StdEncoding.EncodeToString([]byte("\x89PNG\r\n\x1a\nnot really a photo"))
	if err := g.do(t.Context(), http.MethodPost, "/ticket/"+string(ref)+"/correspond", nil, map[string]any{
		"Content": "Here is the map.", "ContentType": "text/plain",
		"Attachments": []map[string]string{{"FileName": "map.png", "FileType": "image/png", "FileContent": photo}},
	}, nil); err != nil {
		t.Fatal(err)
	}
	evs := eventsOn(t, a, c0, ref)
	if len(evs) != 2 {
		t.Fatalf("events: %+v; want two replies", evs)
	}
	want := "Dear Ada,\n\nthe towels are on their way & the cot too.\nKind regards\n\n- towels\n- cot"
	if evs[0].Body != want {
		t.Errorf("the rich-text reply became %q, want %q", evs[0].Body, want)
	}
	if want := "Here is the map."; evs[1].Body != want {
		t.Errorf("the reply with a file became %q, want %q (the text alone)", evs[1].Body, want)
	}
	snap, err := g.Read(t.Context(), ref)
	if err != nil {
		t.Fatal(err)
	}
	notes := 0
	for _, m := range snap.Messages {
		if !m.Public && strings.Contains(m.Text, "Not sent to the guest: map.png") {
			notes++
		}
	}
	if notes != 1 {
		t.Errorf("the ticket holds %d comments naming map.png as not sent, want 1: %+v", notes, snap.Messages)
	}
}

func TestStatusesAtCreateAndBackfill(t *testing.T) {
	r := needRT(t)
	queue := r.queue(t, "status")
	a := r.open(t, map[string]string{"TICKETBRIDGE_RT_QUEUE": queue, "TICKETBRIDGE_RT_QUEUES": ""})
	g := r.agent()
	c0 := head(t, a)

	// RT's default lifecycle refuses "rejected" for a new ticket; the
	// adapter creates it and then moves it.
	cancelled := upTicket("", guestapi.StatusCancelled)
	ref, err := a.EnsureTicket(t.Context(), cancelled)
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := g.ticket(t, ref); st != "rejected" {
		t.Errorf("a cancelled request became an RT ticket in %q, want rejected", st)
	}

	// Filling in the thread of a closed request does not reopen it; a
	// new guest message does (RT's own scrip), and neither comes back.
	done := upTicket("", guestapi.StatusDone)
	ref, err = a.EnsureTicket(t.Context(), done)
	if err != nil {
		t.Fatal(err)
	}
	old := []adapters.Message{guestMsg("Towels please.", time.Now().Add(-time.Hour)), guestMsg("Thanks!", time.Now().Add(-30*time.Minute))}
	if _, err := a.Append(t.Context(), ref, old); err != nil {
		t.Fatal(err)
	}
	if st, _ := g.ticket(t, ref); st != "resolved" {
		t.Errorf("after the thread of a done request was filled in the ticket is %q, want resolved", st)
	}
	if _, err := a.Append(t.Context(), ref, []adapters.Message{guestMsg("One more thing…", time.Now().Add(time.Minute))}); err != nil {
		t.Fatal(err)
	}
	if st, _ := g.ticket(t, ref); st != "open" {
		t.Errorf("after a new guest message on a resolved ticket it is %q, want open", st)
	}
	if evs := eventsOn(t, a, c0, ref); len(evs) != 0 {
		t.Errorf("the bridge's own writes and RT's reopen came back: %+v", evs)
	}
}

func TestDeletedTicketIsReported(t *testing.T) {
	r := needRT(t)
	queue := r.queue(t, "deleted")
	a := r.open(t, map[string]string{"TICKETBRIDGE_RT_QUEUE": queue, "TICKETBRIDGE_RT_QUEUES": ""})
	tk := upTicket("", guestapi.StatusNew)
	ref, err := a.EnsureTicket(t.Context(), tk)
	if err != nil {
		t.Fatal(err)
	}
	c0 := head(t, a)
	if err := r.agent().SetStatus(t.Context(), ref, "", "deleted"); err != nil {
		t.Fatal(err)
	}
	fresh := r.open(t, map[string]string{"TICKETBRIDGE_RT_QUEUE": queue, "TICKETBRIDGE_RT_QUEUES": ""})
	evs := eventsOn(t, fresh, c0, ref)
	if len(evs) != 1 || evs[0].Kind != adapters.EventStatus || evs[0].Status != guestapi.StatusCancelled {
		t.Errorf("an agent deleting the ticket: %+v; want one status event, cancelled", evs)
	}
	// The adapter that saw the ticket still knows it; RT's searches no
	// longer show deleted tickets (the package doc says what follows).
	if err := a.SetStatus(t.Context(), ref, guestapi.StatusInProgress); err != nil {
		t.Errorf("SetStatus on a deleted ticket: %v", err)
	}
	if st, _ := r.agent().ticket(t, ref); st != "open" {
		t.Errorf("the bridge moving a deleted ticket on left it %q, want open", st)
	}
	if again, err := fresh.EnsureTicket(t.Context(), tk); err != nil || again != ref {
		t.Errorf("EnsureTicket of a ticket deleted and brought back = %q, %v; want %q", again, err, ref)
	}
}

func TestMarkerWrittenByAnotherUserIsOwn(t *testing.T) {
	r := needRT(t)
	queue := r.queue(t, "marker")
	a := r.open(t, map[string]string{"TICKETBRIDGE_RT_QUEUE": queue, "TICKETBRIDGE_RT_QUEUES": ""})
	ref, err := a.EnsureTicket(t.Context(), upTicket("", guestapi.StatusNew))
	if err != nil {
		t.Fatal(err)
	}
	c0 := head(t, a)
	g := r.agent()
	id := uuid.NewString()
	// As the bridge would have written it, had it run as another user.
	if err := g.Reply(t.Context(), ref, "", "Ada Guest (guest) · 2026-03-14 09:33 UTC\n\nHello\n\n[ticketbridge message "+id+"]\n"); err != nil {
		t.Fatal(err)
	}
	// An agent quoting a mirrored message is no marker.
	quote := "Noted.\n\n> Hello\n> [ticketbridge message " + id + "]"
	if err := g.Reply(t.Context(), ref, "", quote); err != nil {
		t.Fatal(err)
	}
	evs := eventsOn(t, a, c0, ref)
	if len(evs) != 1 || evs[0].Body != quote {
		t.Errorf("events: %+v; want only the agent's quoting reply", evs)
	}
	f, ok, err := a.Lookup(t.Context(), "no-such-"+id)
	if err != nil || ok {
		t.Errorf("Lookup of an unknown id = %+v, %v, %v", f, ok, err)
	}
}

// TestCursorSurvivesBadInput checks the cursor's own errors.
func TestCursorSurvivesBadInput(t *testing.T) {
	r := needRT(t)
	a := r.open(t, nil)
	if _, _, err := a.Changes(context.Background(), "not-a-cursor"); !errors.Is(err, adapters.ErrInvalid) {
		t.Errorf("Changes with a foreign cursor: %v, want ErrInvalid", err)
	}
}

// TestMarkSentConcurrently checks that deliveries recorded at once on one
// ticket all stay: REST2 replaces a multi-value field with the list it is
// given.
func TestMarkSentConcurrently(t *testing.T) {
	r := needRT(t)
	queue := r.queue(t, "marksent")
	a := r.open(t, map[string]string{"TICKETBRIDGE_RT_QUEUE": queue, "TICKETBRIDGE_RT_QUEUES": ""})
	tk := upTicket("", guestapi.StatusNew)
	ref, err := a.EnsureTicket(t.Context(), tk)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	var wg sync.WaitGroup
	for i := range 6 {
		ev, up := strings.Repeat("9", i+1), uuid.NewString()
		if i == 0 {
			up = "" // a status change
		}
		want[ev] = up
		wg.Go(func() {
			if err := a.MarkSent(t.Context(), ref, ev, up); err != nil {
				t.Errorf("MarkSent(%s): %v", ev, err)
			}
		})
	}
	wg.Wait()
	f, ok, err := r.open(t, map[string]string{"TICKETBRIDGE_RT_QUEUE": queue, "TICKETBRIDGE_RT_QUEUES": ""}).Lookup(t.Context(), tk.UpstreamID)
	if err != nil || !ok {
		t.Fatalf("Lookup = %v, %v", ok, err)
	}
	if len(f.Sent) != len(want) {
		t.Fatalf("Lookup's Sent = %v, want %v", f.Sent, want)
	}
	for ev, up := range want {
		if got, ok := f.Sent[ev]; !ok || got != up {
			t.Errorf("Sent[%s] = %q, %v; want %q", ev, got, ok, up)
		}
	}
}

// TestDuplicateTicketsAreMerged plays what a bridge killed while RT creates
// a ticket can leave behind: two tickets of one request. Lookup keeps the
// one holding the mirrored messages and merges the other into it.
func TestDuplicateTicketsAreMerged(t *testing.T) {
	r := needRT(t)
	queue := r.queue(t, "dup")
	a := r.open(t, map[string]string{"TICKETBRIDGE_RT_QUEUE": queue, "TICKETBRIDGE_RT_QUEUES": ""})
	tk := upTicket("", guestapi.StatusNew)
	g := r.agent()
	// The orphan: created first, holding nothing but the request.
	var orphan struct {
		ID string `json:"id"`
	}
	if err := g.do(t.Context(), http.MethodPost, "/ticket", nil, map[string]any{
		"Queue": queue, "Subject": "orphan", "Content": "Guest request " + tk.UpstreamID, "ContentType": "text/plain",
		"CustomFields": map[string]string{rt.DefaultIDField: tk.UpstreamID},
	}, &orphan); err != nil {
		t.Fatal(err)
	}
	// The second ticket, which holds what was mirrored; the adapter would
	// have made it had its search come before the orphan's create ended.
	var second struct {
		ID string `json:"id"`
	}
	if err := g.do(t.Context(), http.MethodPost, "/ticket", nil, map[string]any{
		"Queue": queue, "Subject": "second", "Content": "Guest request " + tk.UpstreamID, "ContentType": "text/plain",
		"CustomFields": map[string]string{rt.DefaultIDField: tk.UpstreamID},
	}, &second); err != nil {
		t.Fatal(err)
	}
	m := guestMsg("Hello from the second ticket.", time.Now())
	if _, err := a.Append(t.Context(), adapters.Ref(second.ID), []adapters.Message{m}); err != nil {
		t.Fatal(err)
	}
	f, ok, err := a.Lookup(t.Context(), tk.UpstreamID)
	if err != nil || !ok {
		t.Fatalf("Lookup = %v, %v", ok, err)
	}
	if string(f.Ref) != second.ID || len(f.Messages) != 1 {
		t.Errorf("Lookup = %+v; want ticket %s with the one message", f, second.ID)
	}
	var found struct{ Items []struct{ ID string } }
	q := url.Values{"query": {"'CF.{" + rt.DefaultIDField + "}' = '" + tk.UpstreamID + "'"}}
	if err := g.do(t.Context(), http.MethodGet, "/tickets", q, nil, &found); err != nil {
		t.Fatal(err)
	}
	if len(found.Items) != 1 || found.Items[0].ID != second.ID {
		t.Errorf("RT shows the tickets %+v of the request, want only %s", found.Items, second.ID)
	}
	// The merged ticket's number leads to the kept one.
	if got, err := a.EnsureTicket(t.Context(), tk); err != nil || string(got) != second.ID {
		t.Errorf("EnsureTicket after the merge = %q, %v; want %s", got, err, second.ID)
	}
	if app, err := a.Append(t.Context(), adapters.Ref(orphan.ID), []adapters.Message{m}); err != nil || !app[0].Existed {
		t.Errorf("Append through the merged ticket's number = %+v, %v; want the message found", app, err)
	}
}
