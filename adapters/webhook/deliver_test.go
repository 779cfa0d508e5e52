package webhook_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/webhook"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/internal/httpretry"
	"github.com/ticketbridge/ticketbridge/internal/httpx"
	"github.com/ticketbridge/ticketbridge/internal/testutil"
)

// attempt is one request the receiver's URL got.
type attempt struct {
	header http.Header
	body   []byte
}

// recorder answers with the statuses given, in turn (the last one for
// every later attempt), and keeps every attempt.
type recorder struct {
	mu       sync.Mutex
	statuses []int
	header   http.Header // added to every answer
	body     string
	got      []attempt
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	rec.mu.Lock()
	rec.got = append(rec.got, attempt{header: r.Header.Clone(), body: b})
	st := rec.statuses[min(len(rec.got), len(rec.statuses))-1]
	rec.mu.Unlock()
	for k, v := range rec.header {
		w.Header()[k] = v
	}
	w.WriteHeader(st)
	_, _ = io.WriteString(w, rec.body)
}

func (rec *recorder) attempts() []attempt {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return slices.Clone(rec.got)
}

func upTicket(id string) adapters.Ticket {
	rating := 4.5
	return adapters.Ticket{
		UpstreamID: id, Department: "housekeeping", Status: guestapi.StatusNew, TaskDescription: "Extra towels for room 214",
		Origin: guestapi.OriginGuest, Comments: "VIP", GuestRating: &rating,
		CreatedAt: time.Date(2026, 3, 14, 8, 26, 53, 589793000, time.UTC), UpdatedAt: time.Date(2026, 3, 14, 9, 26, 53, 589793000, time.UTC),
	}
}

func guestMsg(id, body string) adapters.Message {
	return adapters.Message{UpstreamID: id, AuthorType: guestapi.AuthorGuest, AuthorName: "Ada Lovelace", Body: body, Public: true,
		CreatedAt: time.Date(2026, 3, 14, 9, 30, 0, 0, time.UTC)}
}

func TestDeliveryHeadersAndSignature(t *testing.T) {
	r := newRig(t, false)
	ctx := t.Context()
	before := time.Now().Unix()
	ref, err := r.a.EnsureTicket(ctx, upTicket("t-1"))
	if err != nil {
		t.Fatal(err)
	}
	if ref != "t-1" {
		t.Errorf("ref %q, want the upstream id", ref)
	}
	if _, err := r.a.Append(ctx, ref, []adapters.Message{guestMsg("m-1", "Two towels, please.")}); err != nil {
		t.Fatal(err)
	}
	if err := r.a.SetStatus(ctx, ref, guestapi.StatusDone); err != nil {
		t.Fatal(err)
	}
	ds := r.rc.Deliveries()
	var events []string
	for _, d := range ds {
		events = append(events, d.Event)
	}
	if want := []string{"ticket.created", "message.added", "status.changed"}; !slices.Equal(events, want) {
		t.Fatalf("receiver accepted %v, want %v", events, want)
	}
	after := time.Now().Unix()
	for _, d := range ds {
		if d.Timestamp < before || d.Timestamp > after {
			t.Errorf("%s: timestamp %d, want the time it was sent, %d..%d", d.Event, d.Timestamp, before, after)
		}
		var head struct{ ID, Type string }
		if err := json.Unmarshal(d.Body, &head); err != nil || head.ID != d.ID || head.Type != d.Event {
			t.Errorf("%s: body id/type %q/%q, headers %q/%q", d.Event, head.ID, head.Type, d.ID, d.Event)
		}
	}
	if st := r.rc.Stats(); st.Rejected != 0 || st.Invalid != 0 {
		t.Errorf("receiver stats %+v: a delivery failed verification", st)
	}
}

func TestDeliveryIDsAreStableAcrossRetriesAndInstances(t *testing.T) {
	r := newRig(t, false)
	ctx := t.Context()
	rec := &recorder{statuses: []int{500, 502, 503}}
	restore := r.answer(rec.ServeHTTP)

	_, err := r.a.EnsureTicket(ctx, upTicket("t-1"))
	var de *webhook.DeliveryError
	if !errors.As(err, &de) || errors.Is(err, adapters.ErrInvalid) || de.Status != 503 || de.Attempts != adapters.DefaultHTTPAttempts {
		t.Fatalf("EnsureTicket against a failing receiver: %v, want a temporary DeliveryError after %d attempts", err, adapters.DefaultHTTPAttempts)
	}
	if _, ok, _ := r.a.Lookup(ctx, "t-1"); ok {
		t.Fatal("a ticket no receiver acknowledged is recorded as delivered")
	}
	// A later call (the engine's next cycle) on a fresh instance: the
	// receiver heals and takes the same delivery.
	restore()
	b := r.open(webhook.Options{Sleep: r.sleep.Sleep})
	if _, err := b.EnsureTicket(ctx, upTicket("t-1")); err != nil {
		t.Fatal(err)
	}
	got := rec.attempts()
	ids := map[string]bool{}
	for i, at := range got {
		ids[at.header.Get(webhook.HeaderDelivery)] = true
		if at.header.Get(webhook.HeaderEvent) != webhook.EventTicketCreated {
			t.Errorf("attempt %d: event header %q", i, at.header.Get(webhook.HeaderEvent))
		}
		// Every attempt is signed at its own time, so none goes stale.
		if err := webhook.Verify(testSecret, at.header.Get(webhook.HeaderTimestamp), at.header.Get(webhook.HeaderSignature), at.body, time.Now(), time.Hour); err != nil {
			t.Errorf("attempt %d: %v", i, err)
		}
	}
	ds := r.rc.Deliveries()
	if len(ds) != 1 {
		t.Fatalf("receiver accepted %d deliveries, want 1", len(ds))
	}
	ids[ds[0].ID] = true
	if len(ids) != 1 {
		t.Errorf("the retries carried %d delivery ids, want 1: %v", len(ids), ids)
	}
	// Waits came from the backoff: one fewer than the attempts.
	if n := len(r.sleep.Sleeps()); n != adapters.DefaultHTTPAttempts-1 {
		t.Errorf("slept %d times, want %d", n, adapters.DefaultHTTPAttempts-1)
	}
}

// TestDeliveryRetriesAreSignedAnew: each attempt carries the time it is
// sent, so that a long backoff never makes a retry stale. In a bubble the
// backoff's real timers move the clock, and the receiver's stand-in is
// served on in-memory connections.
func TestDeliveryRetriesAreSignedAnew(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{statuses: []int{500, 502, 503, 204}}
		cfg := webhook.Config{URL: testutil.PipeURL + "/hooks", Secret: testSecret, Dir: t.TempDir(), Listen: webhook.ListenOff}
		a, err := webhook.New(t.Context(), cfg, webhook.Options{
			HTTP:    &http.Client{Transport: testutil.PipeServer(t, rec)},
			Backoff: httpretry.Backoff{Base: 10 * time.Second, Max: time.Minute, Rand: func() float64 { return 0.5 }},
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close() })
		start := time.Now()
		if _, err := a.EnsureTicket(t.Context(), upTicket("t-1")); err != nil {
			t.Fatal(err)
		}
		var got []int64
		for _, at := range rec.attempts() {
			ts, err := strconv.ParseInt(at.header.Get(webhook.HeaderTimestamp), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, ts-start.Unix())
		}
		// Backoff.Delay of attempts 1..3 with Rand 0.5: 5s, 10s, 20s.
		if want := []int64{0, 5, 15, 35}; !slices.Equal(got, want) {
			t.Errorf("attempts signed %v seconds after the first call, want %v", got, want)
		}
	})
}

func TestDeliveryHonoursRetryAfter(t *testing.T) {
	r := newRig(t, false)
	rec := &recorder{statuses: []int{429, 503, 204}, header: http.Header{"Retry-After": {"7"}}}
	r.answer(rec.ServeHTTP)
	if _, err := r.a.EnsureTicket(t.Context(), upTicket("t-1")); err != nil {
		t.Fatal(err)
	}
	if got := r.sleep.Sleeps(); !slices.Equal(got, []time.Duration{7 * time.Second, 7 * time.Second}) {
		t.Errorf("waits %v, want Retry-After's 7s twice", got)
	}
}

// A receiver's 4xx says nothing about the ticket: the call fails
// temporarily (the engine repeats it) and never with ErrInvalid or
// ErrNotFound, which would make the engine give up on the ticket or make a
// second one.
func TestReceiverRefusalIsTemporary(t *testing.T) {
	for _, status := range []int{400, 401, 404, 409, 410, 422} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			r := newRig(t, false)
			ctx := t.Context()
			ref, err := r.a.EnsureTicket(ctx, upTicket("t-1"))
			if err != nil {
				t.Fatal(err)
			}
			rec := &recorder{statuses: []int{status}}
			restore := r.answer(rec.ServeHTTP)
			_, err = r.a.Append(ctx, ref, []adapters.Message{guestMsg("m-1", "hello")})
			var de *webhook.DeliveryError
			if !errors.As(err, &de) {
				t.Fatalf("Append: %v, want a temporary DeliveryError", err)
			}
			if errors.Is(err, adapters.ErrInvalid) || errors.Is(err, adapters.ErrNotFound) {
				t.Fatalf("Append: %v matches ErrInvalid or ErrNotFound", err)
			}
			if want := status == 401; errors.Is(err, adapters.ErrAuth) != want {
				t.Errorf("Append: %v; matches ErrAuth = %v, want %v", err, !want, want)
			}
			if len(rec.attempts()) != 1 {
				t.Errorf("%d attempts of a %d within one call, want 1 (it would fail the same way)", len(rec.attempts()), status)
			}
			f, _, _ := r.a.Lookup(ctx, "t-1")
			if len(f.Messages) != 0 {
				t.Fatalf("a refused message is recorded as delivered: %v", f.Messages)
			}
			restore()
			got, err := r.a.Append(ctx, ref, []adapters.Message{guestMsg("m-1", "hello")})
			if err != nil || len(got) != 1 || got[0].Existed {
				t.Fatalf("Append after the receiver healed = %+v, %v", got, err)
			}
			if id := rec.attempts()[0].header.Get(webhook.HeaderDelivery); got[0].HelpdeskID != id {
				t.Errorf("delivered as %s, refused as %s: the delivery id changed", got[0].HelpdeskID, id)
			}
		})
	}
}

func TestAppendStopsAtFirstFailureAndResumes(t *testing.T) {
	r := newRig(t, false)
	ctx := t.Context()
	ref, _ := r.a.EnsureTicket(ctx, upTicket("t-1"))
	msgs := []adapters.Message{guestMsg("m-1", "one"), guestMsg("m-2", "two"), guestMsg("m-3", "three")}
	var n atomic.Int32
	restore := r.answer(func(w http.ResponseWriter, req *http.Request) {
		if n.Add(1) == 2 {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		r.rc.ServeHTTP(w, req)
	})
	if _, err := r.a.Append(ctx, ref, msgs); err == nil {
		t.Fatal("Append succeeded although the second delivery was refused")
	}
	restore()
	got, err := r.a.Append(ctx, ref, msgs)
	if err != nil {
		t.Fatal(err)
	}
	if !got[0].Existed || got[1].Existed || got[2].Existed {
		t.Errorf("second Append: %+v; want only m-1 existing", got)
	}
	tk, _ := r.rc.Ticket("t-1")
	var bodies []string
	for _, m := range tk.Messages {
		bodies = append(bodies, m.Body)
	}
	if !slices.Equal(bodies, []string{"one", "two", "three"}) {
		t.Errorf("receiver holds %q, want one, two, three in order", bodies)
	}
}

func TestSetStatusDeliversOnlyChanges(t *testing.T) {
	r := newRig(t, false)
	ctx := t.Context()
	ref, _ := r.a.EnsureTicket(ctx, upTicket("t-1"))
	for _, s := range []guestapi.Status{guestapi.StatusNew, guestapi.StatusDone, guestapi.StatusDone, guestapi.StatusNew, guestapi.StatusDone} {
		if err := r.a.SetStatus(ctx, ref, s); err != nil {
			t.Fatal(err)
		}
	}
	var ids []string
	for _, d := range r.rc.Deliveries() {
		if d.Event == webhook.EventStatusChanged {
			ids = append(ids, d.ID)
		}
	}
	if len(ids) != 3 {
		t.Fatalf("%d status deliveries, want 3 (new was the status at creation; done twice in a row is one change)", len(ids))
	}
	if ids[0] == ids[2] {
		t.Error("two changes to done share a delivery id: the receiver would drop the second")
	}
	if err := r.a.SetStatus(ctx, ref, "archived"); !errors.Is(err, adapters.ErrInvalid) {
		t.Errorf("SetStatus(archived): %v, want ErrInvalid", err)
	}
}

// The receiver's own status change comes in, goes upstream, and the
// engine sets the same status down again: nothing is delivered back.
func TestInboundStatusIsNotEchoed(t *testing.T) {
	r := newRig(t, false)
	ctx := t.Context()
	ref, _ := r.a.EnsureTicket(ctx, upTicket("t-1"))
	if _, err := r.rc.Send(ctx, webhook.InboundEvent{ID: "rx-1", Type: webhook.InboundStatus, TicketID: "t-1", Status: "in_progress"}); err != nil {
		t.Fatal(err)
	}
	before := len(r.rc.Deliveries())
	if err := r.a.SetStatus(ctx, ref, guestapi.StatusInProgress); err != nil {
		t.Fatal(err)
	}
	if n := len(r.rc.Deliveries()); n != before {
		t.Errorf("the receiver's own status came back as a delivery")
	}
	if err := r.a.SetStatus(ctx, ref, guestapi.StatusDone); err != nil {
		t.Fatal(err)
	}
	if n := len(r.rc.Deliveries()); n != before+1 {
		t.Errorf("a later upstream change was not delivered")
	}
}

// A message the bridge posted upstream from an inbound reply is not
// delivered back to the receiver when it shows up in the thread.
func TestOwnPostsAreNotEchoed(t *testing.T) {
	r := newRig(t, false)
	ctx := t.Context()
	ref, _ := r.a.EnsureTicket(ctx, upTicket("t-1"))
	if _, err := r.rc.Send(ctx, webhook.InboundEvent{ID: "rx-9", Type: webhook.InboundReply, TicketID: "t-1", Body: "On its way."}); err != nil {
		t.Fatal(err)
	}
	evs, _, err := r.a.Changes(ctx, "")
	if err != nil || len(evs) != 1 {
		t.Fatalf("Changes = %+v, %v", evs, err)
	}
	if err := r.a.MarkSent(ctx, ref, evs[0].ID, "up-77"); err != nil {
		t.Fatal(err)
	}
	before := len(r.rc.Deliveries())
	echo := adapters.Message{UpstreamID: "up-77", AuthorType: guestapi.AuthorStaff, AuthorName: "API", Body: "On its way.", Public: true}
	got, err := r.a.Append(ctx, ref, []adapters.Message{echo})
	if err != nil || len(got) != 1 || !got[0].Existed || got[0].HelpdeskID != "rx-9" {
		t.Fatalf("Append of the bridge's own post = %+v, %v; want it existing as rx-9", got, err)
	}
	if len(r.rc.Deliveries()) != before {
		t.Error("the bridge's own post was delivered back to the receiver")
	}
}

// TestGuardStopsDeliveriesAndRecords: once the adapter's guard refuses
// (a replica whose lease ended), nothing more is delivered and the
// webhook directory's records are not written.
func TestGuardStopsDeliveriesAndRecords(t *testing.T) {
	r := newRig(t, false)
	ctx := t.Context()
	errEnded := errors.New("the lease ended")
	var refuse atomic.Bool
	guard := func() error {
		if refuse.Load() {
			return errEnded
		}
		return nil
	}
	opts := r.opts
	opts.Listener, opts.Guard = nil, guard
	opts.HTTP = httpx.Chain{Guard: guard}.Client(&http.Client{})
	a := r.open(opts)
	ref, err := a.EnsureTicket(ctx, upTicket("t-1"))
	if err != nil {
		t.Fatal(err)
	}
	refuse.Store(true)
	before := len(r.rc.Deliveries())
	msg := adapters.Message{UpstreamID: "up-1", AuthorType: guestapi.AuthorGuest, AuthorName: "Guest", Body: "A towel, please.", Public: true}
	if _, err := a.Append(ctx, ref, []adapters.Message{msg}); err == nil || !strings.Contains(err.Error(), errEnded.Error()) {
		t.Errorf("Append under a refusing guard = %v, want refused", err)
	}
	if err := a.MarkSent(ctx, ref, "rx-1", "up-9"); !errors.Is(err, errEnded) {
		t.Errorf("MarkSent under a refusing guard = %v, want its error", err)
	}
	if n := len(r.rc.Deliveries()); n != before {
		t.Errorf("%d deliveries under a refusing guard, want none", n-before)
	}
	// Nothing was recorded: the same calls go through once allowed.
	refuse.Store(false)
	got, err := a.Append(ctx, ref, []adapters.Message{msg})
	if err != nil || len(got) != 1 || got[0].Existed {
		t.Errorf("Append after the refusal = %+v, %v; want the message added now", got, err)
	}
}

func TestCheck(t *testing.T) {
	r := newRig(t, false)
	if err := r.a.Check(t.Context()); err != nil {
		t.Fatalf("Check: %v", err)
	}
	ds := r.rc.Deliveries()
	if len(ds) != 1 || ds[0].Event != webhook.EventPing {
		t.Fatalf("receiver got %+v, want one ping", ds)
	}

	rec := &recorder{statuses: []int{401}, body: `{"error":"bad signature"}`}
	r.answer(rec.ServeHTTP)
	err := r.a.Check(t.Context())
	if !errors.Is(err, adapters.ErrAuth) || !strings.Contains(err.Error(), "secret") {
		t.Fatalf("Check against a receiver refusing the signature: %v; want ErrAuth and a hint about the secret", err)
	}
	if len(rec.attempts()) != 1 {
		t.Errorf("Check sent %d pings, want 1", len(rec.attempts()))
	}
	// A ping is not sent again, so its error promises no second sending.
	if strings.Contains(err.Error(), "sent again") {
		t.Errorf("a failed ping promises a resend: %v", err)
	}
}

// A receiver may answer ticket.created before acknowledging it (a note, an
// auto-assignment): the ticket is known to the inbound endpoint already,
// though not to Lookup until the delivery is acknowledged.
func TestReceiverMayAnswerTicketCreatedAtOnce(t *testing.T) {
	r := newRig(t, false)
	ctx := t.Context()
	var (
		mu         sync.Mutex // the handler runs on the server's goroutine
		inbound    webhook.InboundAnswer
		sendErr    error
		foundEarly bool
	)
	r.answer(func(w http.ResponseWriter, req *http.Request) {
		if req.Header.Get(webhook.HeaderEvent) == webhook.EventTicketCreated {
			_, found, _ := r.a.Lookup(req.Context(), "t-1")
			ans, err := r.rc.Send(req.Context(), webhook.InboundEvent{ID: "auto-1", Type: webhook.InboundStatus, TicketID: "t-1", Status: "assigned"})
			mu.Lock()
			foundEarly, inbound, sendErr = found, ans, err
			mu.Unlock()
		}
		r.rc.ServeHTTP(w, req)
	})
	if _, err := r.a.EnsureTicket(ctx, upTicket("t-1")); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if sendErr != nil || !inbound.OK {
		t.Fatalf("an event sent while ticket.created was in flight: %+v, %v", inbound, sendErr)
	}
	if foundEarly {
		t.Error("Lookup found the ticket before its delivery was acknowledged")
	}
	if _, ok, _ := r.a.Lookup(ctx, "t-1"); !ok {
		t.Fatal("Lookup does not find the delivered ticket")
	}
	evs, _, err := r.a.Changes(ctx, "")
	if err != nil || len(evs) != 1 || evs[0].Status != guestapi.StatusAssigned {
		t.Fatalf("Changes = %+v, %v", evs, err)
	}
	// The receiver's status stands: setting it from upstream is no change.
	before := len(r.rc.Deliveries())
	if err := r.a.SetStatus(ctx, "t-1", guestapi.StatusAssigned); err != nil {
		t.Fatal(err)
	}
	if len(r.rc.Deliveries()) != before {
		t.Error("the receiver's own status was delivered back")
	}
}

// A ticket whose delivery failed is not there for any method but
// EnsureTicket, which delivers it again.
func TestPendingTicketIsNotThere(t *testing.T) {
	r := newRig(t, false)
	ctx := t.Context()
	rec := &recorder{statuses: []int{400}}
	restore := r.answer(rec.ServeHTTP)
	if _, err := r.a.EnsureTicket(ctx, upTicket("t-1")); err == nil {
		t.Fatal("EnsureTicket succeeded against a refusing receiver")
	}
	if _, err := r.a.Append(ctx, "t-1", []adapters.Message{guestMsg("m-1", "x")}); !errors.Is(err, adapters.ErrNotFound) {
		t.Errorf("Append to an unacknowledged ticket: %v, want ErrNotFound", err)
	}
	if err := r.a.SetStatus(ctx, "t-1", guestapi.StatusDone); !errors.Is(err, adapters.ErrNotFound) {
		t.Errorf("SetStatus of an unacknowledged ticket: %v, want ErrNotFound", err)
	}
	if err := r.a.MarkSent(ctx, "t-1", "e", "m"); !errors.Is(err, adapters.ErrNotFound) {
		t.Errorf("MarkSent on an unacknowledged ticket: %v, want ErrNotFound", err)
	}
	restore()
	if _, err := r.a.EnsureTicket(ctx, upTicket("t-1")); err != nil {
		t.Fatal(err)
	}
	if n := len(r.rc.Deliveries()); n != 1 {
		t.Errorf("%d deliveries, want the one ticket.created", n)
	}
}
