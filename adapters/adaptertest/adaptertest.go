// Package adaptertest is the conformance suite every helpdesk adapter runs
// against its backend: an in-memory helpdesk, a folder, a Request Tracker in
// a container, a fake Zendesk served by httptest.
//
// An adapter's test builds a [Harness] — how to open a fresh adapter on the
// backend, an [Agent] that acts in the helpdesk as a member of the support
// team would, and what the adapter can do — and calls [Run]. The suite checks
// the contract of [adapters.Helpdesk]: idempotent creates and appends, public
// versus internal messages, author and time in the mirrored text, statuses
// both ways, cursors, own writes never reported, lookup after the bridge's
// state is lost, errors for unknown tickets and bad input, text kept
// intact, and, where the harness can make the backend fail, refused
// credentials as adapters.ErrAuth, outages and rate limits as temporary
// errors that a repeat completes once, no credential in any error or log,
// and archived tickets found again.
//
// It is not a unit test of any one adapter (each adapter tests its own
// details, such as its wire format, next to this suite), and it is not a
// mock: it drives the adapter through its interface only. Every case makes
// few tickets with upstream ids unique to the run, so a shared real helpdesk
// can serve as the backend.
package adaptertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
)

// ErrUnsupported is returned by an [Agent] method the helpdesk cannot do;
// the cases that need it are skipped.
var ErrUnsupported = errors.New("not supported by this helpdesk")

// Agent acts in the helpdesk as the support team would, outside the
// adapter: through the helpdesk's own API as another user, by dropping
// files, through an in-memory helpdesk's agent methods. Its writes are what
// the adapter's Changes must report.
type Agent interface {
	// Reply adds a public reply (correspondence) by author to the ticket.
	Reply(ctx context.Context, ref adapters.Ref, author, body string) error
	// Note adds an internal note by author to the ticket.
	Note(ctx context.Context, ref adapters.Ref, author, body string) error
	// SetStatus sets the ticket's status, in the helpdesk's terms.
	SetStatus(ctx context.Context, ref adapters.Ref, author, status string) error
	// Read returns what the helpdesk holds of the ticket.
	Read(ctx context.Context, ref adapters.Ref) (Snapshot, error)
}

// Snapshot is what a person sees of a ticket in the helpdesk.
type Snapshot struct {
	Status   string            // in the helpdesk's terms
	Messages []SnapshotMessage // oldest first, the ticket's description excluded
}

// SnapshotMessage is one message of a ticket as the helpdesk shows it.
type SnapshotMessage struct {
	// Text is everything a person sees of the message: the header or
	// attribution line the adapter wrote, and the body.
	Text   string
	Public bool // correspondence rather than an internal note
}

// Caps declares what the adapter can do beyond the required minimum.
type Caps struct {
	// MarkSent: Lookup reports what MarkSent recorded.
	MarkSent bool
	// AuthorName: events carry the author name the Agent passed (rather
	// than, say, the helpdesk user the agent is logged in as).
	AuthorName bool
}

// Harness is what the suite needs of an adapter and its backend.
type Harness struct {
	// New opens a fresh adapter instance on the same backend, as after a
	// restart with the bridge's state lost. The suite closes it.
	New func(t testing.TB) adapters.Helpdesk
	// Agent acts in the helpdesk and reads it back.
	Agent Agent
	// Status is the adapter's effective status mapping.
	Status adapters.StatusMap
	// AgentStatuses are the helpdesk statuses the agent sets, in this
	// order, to check that each comes back as the status it maps to. Nil
	// means the keys of Status.FromHelpdesk, sorted; list them when the
	// helpdesk's lifecycle forbids some orders.
	AgentStatuses []string
	// UnknownRef is a well-formed Ref of a ticket the helpdesk does not
	// have. Empty means "no-such-ticket-<uuid>".
	UnknownRef adapters.Ref
	// Settle, when set, is called before the suite reads through the
	// adapter what it has just written (Changes, Lookup), for helpdesks
	// whose search lags behind their writes.
	Settle func(t testing.TB)
	// Caps says what the adapter can do.
	Caps Caps
	// Faults, when set, makes the backend fail as a real helpdesk does;
	// the cases AuthRefused, OutageTemporary and RateLimited need it.
	Faults Faults
	// Secrets are the credentials the adapter was given; no error of the
	// fault cases and nothing in Logs may show one.
	Secrets []string
	// Logs, when set, returns what the adapters logged so far.
	Logs func() string
	// Archive, when set, archives the ticket as the helpdesk does with
	// tickets closed long ago (closing it first when it must be); the
	// case ArchivedTicket needs it.
	Archive func(t testing.TB, ref adapters.Ref)
}

// maxPages bounds how many Changes calls draining a cursor may take.
const maxPages = 1000

// suite is one Run: the harness and the newest cursor seen.
type suite struct {
	h    Harness
	run  string // unique per Run, in every upstream id and body
	head adapters.Cursor
	ctx  context.Context
}

// Run runs the conformance suite against the harness, each case as a
// subtest. It stops at the first case that cannot be set up.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if h.New == nil || h.Agent == nil {
		t.Fatal("adaptertest: Harness.New and Harness.Agent are required")
	}
	if len(h.Status.ToHelpdesk) == 0 {
		t.Fatal("adaptertest: Harness.Status.ToHelpdesk is empty")
	}
	s := &suite{h: h, run: uuid.NewString()[:8], ctx: t.Context()}
	s.head = s.drain(t, s.open(t), "")

	cases := []struct {
		name string
		f    func(t *testing.T)
	}{
		{"Name", s.testName},
		{"EnsureTicketIdempotent", s.testEnsureIdempotent},
		{"AppendIdempotent", s.testAppendIdempotent},
		{"PublicAndInternal", s.testPublicInternal},
		{"AuthorTypeAndTimeVisible", s.testAuthorVisible},
		{"StatusDown", s.testStatusDown},
		{"StatusUp", s.testStatusUp},
		{"ChangesCursor", s.testCursor},
		{"OwnWritesFiltered", s.testOwnWrites},
		{"LookupAfterStateLoss", s.testLookup},
		{"UnknownRef", s.testUnknownRef},
		{"BadInput", s.testBadInput},
		{"TextPreserved", s.testText},
		{"ClosedTicket", s.testClosed},
		{"ConcurrentTickets", s.testConcurrent},
		{"AuthRefused", s.testAuthRefused},
		{"OutageTemporary", s.testOutageTemporary},
		{"RateLimited", s.testRateLimited},
		{"ArchivedTicket", s.testArchived},
	}
	for _, c := range cases {
		t.Run(c.name, c.f)
	}
}

// open returns a fresh adapter instance, closed when t ends.
func (s *suite) open(t testing.TB) adapters.Helpdesk {
	t.Helper()
	hd := s.h.New(t)
	if hd == nil {
		t.Fatal("Harness.New returned nil")
	}
	t.Cleanup(func() {
		if err := hd.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return hd
}

func (s *suite) settle(t testing.TB) {
	t.Helper()
	if s.h.Settle != nil {
		s.h.Settle(t)
	}
}

// baseTime is the time of the suite's first upstream message; the minute is
// odd so that a rendering that drops the time is caught.
var baseTime = time.Date(2026, 3, 14, 9, 26, 53, 589793000, time.UTC)

// ticket returns an upstream ticket with an id unique to the run.
func (s *suite) ticket(desc string) adapters.Ticket {
	return adapters.Ticket{
		UpstreamID:      uuid.NewString(),
		Department:      "housekeeping",
		Status:          guestapi.StatusNew,
		TaskDescription: fmt.Sprintf("%s [run %s]", desc, s.run),
		Origin:          guestapi.OriginGuest,
		CreatedAt:       baseTime.Add(-time.Hour),
		UpdatedAt:       baseTime,
	}
}

// message returns an upstream message whose body holds a token unique to
// it, so that the suite can count it in what the helpdesk shows.
func (s *suite) message(n int, at guestapi.AuthorType, author string, public bool) adapters.Message {
	id := uuid.NewString()
	return adapters.Message{
		UpstreamID: id,
		AuthorType: at,
		AuthorName: author,
		Body:       fmt.Sprintf("Message %d of run %s, token %s.", n, s.run, id[:13]),
		Public:     public,
		CreatedAt:  baseTime.Add(time.Duration(n) * 7 * time.Minute),
	}
}

// ensure creates t's ticket with a fresh instance and returns the instance
// and the ref.
func (s *suite) ensure(t *testing.T, tk adapters.Ticket) (adapters.Helpdesk, adapters.Ref) {
	t.Helper()
	hd := s.open(t)
	ref, err := hd.EnsureTicket(s.ctx, tk)
	if err != nil {
		t.Fatalf("EnsureTicket(%s): %v", tk.UpstreamID, err)
	}
	if ref == "" {
		t.Fatalf("EnsureTicket(%s) returned an empty Ref", tk.UpstreamID)
	}
	return hd, ref
}

func (s *suite) read(t testing.TB, ref adapters.Ref) Snapshot {
	t.Helper()
	snap, err := s.h.Agent.Read(s.ctx, ref)
	if err != nil {
		t.Fatalf("Agent.Read(%s): %v", ref, err)
	}
	return snap
}

// agentDo runs an agent action, skipping the case when the helpdesk cannot
// do it.
func agentDo(t testing.TB, what string, err error) {
	t.Helper()
	if errors.Is(err, ErrUnsupported) {
		t.Skipf("agent cannot %s: %v", what, err)
	}
	if err != nil {
		t.Fatalf("agent %s: %v", what, err)
	}
}

// drain calls Changes from cursor until it reports nothing new and returns
// the final cursor.
func (s *suite) drain(t testing.TB, hd adapters.Helpdesk, cursor adapters.Cursor) adapters.Cursor {
	t.Helper()
	_, c := s.collect(t, hd, cursor, nil)
	return c
}

// collect calls Changes from cursor until it reports nothing new, and
// returns the events on the tickets in refs (all events when refs is nil)
// and the final cursor. It moves the suite's head forward.
func (s *suite) collect(t testing.TB, hd adapters.Helpdesk, cursor adapters.Cursor, refs []adapters.Ref) ([]adapters.Event, adapters.Cursor) {
	t.Helper()
	s.settle(t)
	var out []adapters.Event
	for range maxPages {
		evs, next, err := hd.Changes(s.ctx, cursor)
		if err != nil {
			t.Fatalf("Changes(%q): %v", cursor, err)
		}
		for _, ev := range evs {
			if refs == nil || slices.Contains(refs, ev.Ref) {
				out = append(out, ev)
			}
		}
		if len(evs) == 0 && next == cursor {
			s.head = next
			return out, next
		}
		if len(evs) > 0 && next == cursor {
			t.Fatalf("Changes(%q) returned %d events and the same cursor: the next call would repeat them", cursor, len(evs))
		}
		cursor = next
	}
	t.Fatalf("Changes did not run dry after %d calls", maxPages)
	return nil, ""
}

// find returns the index of the snapshot message whose text contains
// token, failing when not exactly one does.
func find(t testing.TB, snap Snapshot, token string) int {
	t.Helper()
	idx, n := -1, 0
	for i, m := range snap.Messages {
		if strings.Contains(norm(m.Text), norm(token)) {
			if idx < 0 {
				idx = i
			}
			n++
		}
	}
	switch {
	case n == 0:
		t.Fatalf("no message of the ticket shows %q; the ticket holds:\n%s", token, dump(snap))
	case n > 1:
		t.Fatalf("%d messages of the ticket show %q, want 1; the ticket holds:\n%s", n, token, dump(snap))
	}
	return idx
}

// count returns how many snapshot messages contain token.
func count(snap Snapshot, token string) int {
	n := 0
	for _, m := range snap.Messages {
		if strings.Contains(norm(m.Text), norm(token)) {
			n++
		}
	}
	return n
}

func dump(snap Snapshot) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  status %q\n", snap.Status)
	for i, m := range snap.Messages {
		fmt.Fprintf(&b, "  [%d] public=%v %q\n", i, m.Public, m.Text)
	}
	return b.String()
}

// norm makes texts comparable across helpdesks that store CRLF or add
// trailing whitespace.
func norm(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.TrimSpace(s)
}

func (s *suite) testName(t *testing.T) {
	hd := s.open(t)
	if hd.Name() == "" {
		t.Fatal("Name() is empty")
	}
	if a, b := hd.Name(), s.open(t).Name(); a != b {
		t.Fatalf("Name() differs between instances: %q and %q", a, b)
	}
}

func (s *suite) testEnsureIdempotent(t *testing.T) {
	tk := s.ticket("Extra towels for room 214")
	a, ref := s.ensure(t, tk)
	again, err := a.EnsureTicket(s.ctx, tk)
	if err != nil {
		t.Fatalf("second EnsureTicket: %v", err)
	}
	if again != ref {
		t.Fatalf("second EnsureTicket returned %q, want %q", again, ref)
	}
	b := s.open(t)
	other, err := b.EnsureTicket(s.ctx, tk)
	if err != nil {
		t.Fatalf("EnsureTicket on a fresh instance: %v", err)
	}
	if other != ref {
		t.Fatalf("EnsureTicket on a fresh instance returned %q, want %q (a duplicate ticket)", other, ref)
	}
	s.settle(t)
	f, ok, err := s.open(t).Lookup(s.ctx, tk.UpstreamID)
	if err != nil || !ok || f.Ref != ref {
		t.Fatalf("Lookup = %+v, %v, %v; want Ref %q", f, ok, err, ref)
	}
	snap := s.read(t, ref)
	if want := s.h.Status.Down(tk.Status); snap.Status != want {
		t.Errorf("new ticket has status %q, want %q", snap.Status, want)
	}
}

func (s *suite) testAppendIdempotent(t *testing.T) {
	a, ref := s.ensure(t, s.ticket("Wake-up call at 6:30"))
	m1 := s.message(1, guestapi.AuthorGuest, "Ada Guest", true)
	m2 := s.message(2, guestapi.AuthorStaff, "Front desk", false)
	m3 := s.message(3, guestapi.AuthorGuest, "Ada Guest", true)

	first, err := a.Append(s.ctx, ref, []adapters.Message{m1, m2})
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	checkAppended(t, first, []adapters.Message{m1, m2}, []bool{false, false})
	if first[0].HelpdeskID == "" || first[1].HelpdeskID == "" || first[0].HelpdeskID == first[1].HelpdeskID {
		t.Fatalf("HelpdeskIDs %q and %q: want two distinct non-empty ids", first[0].HelpdeskID, first[1].HelpdeskID)
	}

	second, err := s.open(t).Append(s.ctx, ref, []adapters.Message{m1, m2, m3})
	if err != nil {
		t.Fatalf("second Append on a fresh instance: %v", err)
	}
	checkAppended(t, second, []adapters.Message{m1, m2, m3}, []bool{true, true, false})
	for i := range 2 {
		if second[i].HelpdeskID != first[i].HelpdeskID {
			t.Errorf("message %d: HelpdeskID %q the second time, %q the first", i+1, second[i].HelpdeskID, first[i].HelpdeskID)
		}
	}
	if _, err := a.Append(s.ctx, ref, []adapters.Message{m3}); err != nil {
		t.Fatalf("third Append: %v", err)
	}

	snap := s.read(t, ref)
	var order []int
	for _, m := range []adapters.Message{m1, m2, m3} {
		order = append(order, find(t, snap, m.Body))
	}
	if !slices.IsSorted(order) {
		t.Errorf("messages shown in order %v, want oldest first:\n%s", order, dump(snap))
	}
}

func checkAppended(t *testing.T, got []adapters.Appended, msgs []adapters.Message, existed []bool) {
	t.Helper()
	if len(got) != len(msgs) {
		t.Fatalf("Append returned %d results for %d messages: %+v", len(got), len(msgs), got)
	}
	for i, a := range got {
		if a.UpstreamID != msgs[i].UpstreamID {
			t.Errorf("result %d: UpstreamID %q, want %q", i, a.UpstreamID, msgs[i].UpstreamID)
		}
		if a.HelpdeskID == "" {
			t.Errorf("result %d: empty HelpdeskID", i)
		}
		if a.Existed != existed[i] {
			t.Errorf("result %d: Existed = %v, want %v", i, a.Existed, existed[i])
		}
	}
}

func (s *suite) testPublicInternal(t *testing.T) {
	a, ref := s.ensure(t, s.ticket("Broken kettle"))
	pub := s.message(1, guestapi.AuthorGuest, "Ada Guest", true)
	note := s.message(2, guestapi.AuthorStaff, "Night manager", false)
	if _, err := a.Append(s.ctx, ref, []adapters.Message{pub, note}); err != nil {
		t.Fatalf("Append: %v", err)
	}
	snap := s.read(t, ref)
	if m := snap.Messages[find(t, snap, pub.Body)]; !m.Public {
		t.Errorf("a visible_to_guest message became an internal note: %q", m.Text)
	}
	if m := snap.Messages[find(t, snap, note.Body)]; m.Public {
		t.Errorf("an internal message became public correspondence: %q", m.Text)
	}
}

func (s *suite) testAuthorVisible(t *testing.T) {
	a, ref := s.ensure(t, s.ticket("Late checkout"))
	msgs := []adapters.Message{
		s.message(1, guestapi.AuthorGuest, "Grace Hopper", true),
		s.message(2, guestapi.AuthorStaff, "Linus at reception", true),
		s.message(3, guestapi.AuthorAI, "Concierge bot", true),
		s.message(4, guestapi.AuthorSystem, "Platform", false),
	}
	if _, err := a.Append(s.ctx, ref, msgs); err != nil {
		t.Fatalf("Append: %v", err)
	}
	snap := s.read(t, ref)
	for _, m := range msgs {
		text := snap.Messages[find(t, snap, m.Body)].Text
		at := m.CreatedAt.UTC()
		for _, want := range []string{m.AuthorName, string(m.AuthorType), at.Format("2006-01-02"), at.Format("15:04")} {
			if !strings.Contains(text, want) {
				t.Errorf("the mirrored text of a message by %s (%s) at %s lacks %q:\n%s", m.AuthorName, m.AuthorType, at.Format(time.RFC3339), want, text)
			}
		}
	}
}

func (s *suite) testStatusDown(t *testing.T) {
	a, ref := s.ensure(t, s.ticket("Noise from room 301"))
	for _, st := range guestapi.Statuses() {
		if err := a.SetStatus(s.ctx, ref, st); err != nil {
			t.Fatalf("SetStatus(%s): %v", st, err)
		}
		if got, want := s.read(t, ref).Status, s.h.Status.Down(st); got != want {
			t.Errorf("after SetStatus(%s) the helpdesk shows %q, want %q", st, got, want)
		}
	}
	last := guestapi.Statuses()[len(guestapi.Statuses())-1]
	if err := s.open(t).SetStatus(s.ctx, ref, last); err != nil {
		t.Errorf("SetStatus to the status the ticket has: %v", err)
	}
}

func (s *suite) agentStatuses() []string {
	if s.h.AgentStatuses != nil {
		return s.h.AgentStatuses
	}
	var out []string
	for h := range s.h.Status.FromHelpdesk {
		out = append(out, h)
	}
	slices.Sort(out)
	return out
}

func (s *suite) testStatusUp(t *testing.T) {
	tk := s.ticket("Minibar refill")
	a, ref := s.ensure(t, tk)
	from := s.drain(t, a, s.head)
	current := s.h.Status.Down(tk.Status)
	var want []guestapi.Status
	for _, h := range s.agentStatuses() {
		if h == current {
			continue
		}
		up, ok := s.h.Status.Up(h)
		if !ok {
			t.Fatalf("AgentStatuses lists %q, which Status.FromHelpdesk does not map", h)
		}
		agentDo(t, "set status "+h, s.h.Agent.SetStatus(s.ctx, ref, "Anna (front desk)", h))
		want = append(want, up)
		current = h
	}
	if len(want) == 0 {
		t.Skip("no helpdesk status maps to an upstream one")
	}
	evs, _ := s.collect(t, s.open(t), from, []adapters.Ref{ref})
	var got []guestapi.Status
	for _, ev := range evs {
		checkEvent(t, ev, ref, tk.UpstreamID)
		if ev.Kind != adapters.EventStatus {
			t.Errorf("event %s: kind %q, want %q", ev.ID, ev.Kind, adapters.EventStatus)
			continue
		}
		got = append(got, ev.Status)
	}
	if !slices.Equal(got, want) {
		t.Errorf("agent status changes came back as %v, want %v", got, want)
	}
}

func checkEvent(t testing.TB, ev adapters.Event, ref adapters.Ref, upstreamID string) {
	t.Helper()
	if ev.ID == "" {
		t.Errorf("event with an empty ID: %+v", ev)
	}
	if ev.Ref != ref || ev.UpstreamTicketID != upstreamID {
		t.Errorf("event %s: Ref %q, UpstreamTicketID %q; want %q, %q", ev.ID, ev.Ref, ev.UpstreamTicketID, ref, upstreamID)
	}
	if ev.At.IsZero() {
		t.Errorf("event %s: zero At", ev.ID)
	}
	switch ev.Kind {
	case adapters.EventReply, adapters.EventNote:
		if strings.TrimSpace(ev.Body) == "" {
			t.Errorf("event %s (%s): empty body", ev.ID, ev.Kind)
		}
	case adapters.EventStatus:
		if !ev.Status.Settable() {
			t.Errorf("event %s: status %q is not one the API can set", ev.ID, ev.Status)
		}
	default:
		t.Errorf("event %s: unknown kind %q", ev.ID, ev.Kind)
	}
}

func ids(evs []adapters.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.ID
	}
	return out
}

func (s *suite) testCursor(t *testing.T) {
	tk := s.ticket("Taxi to the airport")
	a, ref := s.ensure(t, tk)
	refs := []adapters.Ref{ref}
	c0 := s.drain(t, a, s.head)
	const author = "Anna (front desk)"
	replyA := fmt.Sprintf("Your taxi is booked for 7:15. [run %s A]", s.run)
	noteB := fmt.Sprintf("Driver confirmed by phone. [run %s B]", s.run)
	replyC := fmt.Sprintf("The driver will wait at the main entrance. [run %s C]", s.run)

	agentDo(t, "reply", s.h.Agent.Reply(s.ctx, ref, author, replyA))
	agentDo(t, "add a note", s.h.Agent.Note(s.ctx, ref, author, noteB))
	first, c1 := s.collect(t, a, c0, refs)
	if len(first) != 2 {
		t.Fatalf("Changes after a reply and a note returned %d events on the ticket, want 2: %+v", len(first), first)
	}
	checkAgentEvent(t, s.h.Caps, first[0], adapters.EventReply, author, replyA)
	checkAgentEvent(t, s.h.Caps, first[1], adapters.EventNote, author, noteB)
	for _, ev := range first {
		checkEvent(t, ev, ref, tk.UpstreamID)
	}
	if first[0].ID == first[1].ID {
		t.Fatalf("two events share the ID %q", first[0].ID)
	}
	if first[1].At.Before(first[0].At) {
		t.Errorf("events not oldest first: %s at %s before %s at %s", first[0].ID, first[0].At, first[1].ID, first[1].At)
	}

	agentDo(t, "reply", s.h.Agent.Reply(s.ctx, ref, author, replyC))
	second, _ := s.collect(t, a, c1, refs)
	if len(second) != 1 {
		t.Fatalf("Changes from the returned cursor gave %d events on the ticket, want only the newer reply: %+v", len(second), second)
	}
	checkAgentEvent(t, s.h.Caps, second[0], adapters.EventReply, author, replyC)

	again, _ := s.collect(t, a, c1, refs)
	if !slices.Equal(ids(again), ids(second)) {
		t.Errorf("the same cursor twice gave %v, then %v", ids(second), ids(again))
	}

	all, _ := s.collect(t, s.open(t), c0, refs)
	if want := append(ids(first), ids(second)...); !slices.Equal(ids(all), want) {
		t.Errorf("a fresh instance from the earlier cursor gave %v, want %v (IDs must be stable across instances)", ids(all), want)
	}

	fromStart, _ := s.collect(t, s.open(t), "", refs)
	if want := append(ids(first), ids(second)...); !slices.Equal(ids(fromStart), want) {
		t.Errorf("Changes from the empty cursor gave %v on the ticket, want %v", ids(fromStart), want)
	}
}

func checkAgentEvent(t testing.TB, caps Caps, ev adapters.Event, kind adapters.EventKind, author, body string) {
	t.Helper()
	if ev.Kind != kind {
		t.Errorf("event %s: kind %q, want %q", ev.ID, ev.Kind, kind)
	}
	if norm(ev.Body) != norm(body) {
		t.Errorf("event %s: body %q, want %q", ev.ID, ev.Body, body)
	}
	if caps.AuthorName && ev.AuthorName != author {
		t.Errorf("event %s: author %q, want %q", ev.ID, ev.AuthorName, author)
	}
}

func (s *suite) testOwnWrites(t *testing.T) {
	probe := s.open(t)
	c0 := s.drain(t, probe, s.head)
	tk := s.ticket("Room service menu")
	a, ref := s.ensure(t, tk)
	msgs := []adapters.Message{
		s.message(1, guestapi.AuthorGuest, "Ada Guest", true),
		s.message(2, guestapi.AuthorStaff, "Kitchen", false),
	}
	if _, err := a.Append(s.ctx, ref, msgs); err != nil {
		t.Fatalf("Append: %v", err)
	}
	for _, st := range []guestapi.Status{guestapi.StatusInProgress, guestapi.StatusDone, guestapi.StatusAssigned} {
		if err := a.SetStatus(s.ctx, ref, st); err != nil {
			t.Fatalf("SetStatus(%s): %v", st, err)
		}
	}
	if _, err := a.Append(s.ctx, ref, []adapters.Message{s.message(3, guestapi.AuthorGuest, "Ada Guest", true)}); err != nil {
		t.Fatalf("Append: %v", err)
	}
	if evs, _ := s.collect(t, probe, c0, []adapters.Ref{ref}); len(evs) != 0 {
		t.Errorf("Changes reported the bridge's own writes: %+v", evs)
	}
}

func (s *suite) testLookup(t *testing.T) {
	tk := s.ticket("Baby cot for room 12")
	a, ref := s.ensure(t, tk)
	msgs := []adapters.Message{
		s.message(1, guestapi.AuthorGuest, "Ada Guest", true),
		s.message(2, guestapi.AuthorStaff, "Housekeeping", false),
	}
	app, err := a.Append(s.ctx, ref, msgs)
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	wantMsgs := map[string]string{}
	for _, x := range app {
		wantMsgs[x.UpstreamID] = x.HelpdeskID
	}

	wantSent := map[string]string{}
	c0 := s.drain(t, a, s.head)
	reply := fmt.Sprintf("The cot is on its way. [run %s]", s.run)
	err = s.h.Agent.Reply(s.ctx, ref, "Anna (front desk)", reply)
	if err != nil && !errors.Is(err, ErrUnsupported) {
		t.Fatalf("agent reply: %v", err)
	}
	if err == nil {
		evs, c1 := s.collect(t, a, c0, []adapters.Ref{ref})
		if len(evs) != 1 {
			t.Fatalf("Changes after one reply: %d events, want 1: %+v", len(evs), evs)
		}
		upMsg := uuid.NewString()
		for range 2 { // MarkSent is idempotent
			if err := a.MarkSent(s.ctx, ref, evs[0].ID, upMsg); err != nil {
				t.Fatalf("MarkSent: %v", err)
			}
		}
		wantSent[evs[0].ID] = upMsg
		if evs, _ := s.collect(t, a, c1, []adapters.Ref{ref}); len(evs) != 0 {
			t.Errorf("Changes reported what MarkSent wrote: %+v", evs)
		}
	}

	b := s.open(t)
	s.settle(t)
	f, ok, err := b.Lookup(s.ctx, tk.UpstreamID)
	if err != nil || !ok {
		t.Fatalf("Lookup on a fresh instance = %v, %v; want the ticket", ok, err)
	}
	if f.Ref != ref {
		t.Errorf("Lookup: Ref %q, want %q", f.Ref, ref)
	}
	if !mapsEqual(f.Messages, wantMsgs) {
		t.Errorf("Lookup: Messages %v, want %v", f.Messages, wantMsgs)
	}
	if s.h.Caps.MarkSent && !mapsEqual(f.Sent, wantSent) {
		t.Errorf("Lookup: Sent %v, want %v", f.Sent, wantSent)
	}

	if _, ok, err := b.Lookup(s.ctx, uuid.NewString()); err != nil || ok {
		t.Errorf("Lookup of an unknown upstream id = %v, %v; want false, nil", ok, err)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func (s *suite) unknownRef() adapters.Ref {
	if s.h.UnknownRef != "" {
		return s.h.UnknownRef
	}
	return adapters.Ref("no-such-ticket-" + uuid.NewString())
}

func (s *suite) testUnknownRef(t *testing.T) {
	hd := s.open(t)
	ref := s.unknownRef()
	if _, err := hd.Append(s.ctx, ref, []adapters.Message{s.message(1, guestapi.AuthorGuest, "Ada Guest", true)}); !errors.Is(err, adapters.ErrNotFound) {
		t.Errorf("Append to an unknown ticket: %v, want ErrNotFound", err)
	}
	if err := hd.SetStatus(s.ctx, ref, guestapi.StatusDone); !errors.Is(err, adapters.ErrNotFound) {
		t.Errorf("SetStatus of an unknown ticket: %v, want ErrNotFound", err)
	}
	if err := hd.MarkSent(s.ctx, ref, "some-event", uuid.NewString()); err != nil && !errors.Is(err, adapters.ErrNotFound) {
		t.Errorf("MarkSent on an unknown ticket: %v, want nil or ErrNotFound", err)
	}
}

func (s *suite) testBadInput(t *testing.T) {
	hd := s.open(t)
	bad := s.ticket("Bad input")
	bad.UpstreamID = ""
	if _, err := hd.EnsureTicket(s.ctx, bad); !errors.Is(err, adapters.ErrInvalid) {
		t.Errorf("EnsureTicket with an empty upstream id: %v, want ErrInvalid", err)
	}

	tk := s.ticket("Pillow menu")
	a, ref := s.ensure(t, tk)
	before := s.read(t, ref)
	good := s.message(1, guestapi.AuthorGuest, "Ada Guest", true)
	empty := s.message(2, guestapi.AuthorGuest, "Ada Guest", true)
	empty.Body = " \n\t "
	if _, err := a.Append(s.ctx, ref, []adapters.Message{good, empty}); !errors.Is(err, adapters.ErrInvalid) {
		t.Errorf("Append with an empty body: %v, want ErrInvalid", err)
	}
	noID := s.message(3, guestapi.AuthorGuest, "Ada Guest", true)
	noID.UpstreamID = ""
	if _, err := a.Append(s.ctx, ref, []adapters.Message{noID}); !errors.Is(err, adapters.ErrInvalid) {
		t.Errorf("Append of a message without upstream id: %v, want ErrInvalid", err)
	}
	for _, st := range []guestapi.Status{"", "archived"} {
		if err := a.SetStatus(s.ctx, ref, st); !errors.Is(err, adapters.ErrInvalid) {
			t.Errorf("SetStatus(%q): %v, want ErrInvalid", st, err)
		}
	}
	after := s.read(t, ref)
	if len(after.Messages) != len(before.Messages) || count(after, good.Body) != 0 || count(after, noID.Body) != 0 {
		t.Errorf("rejected input was written; before:\n%s\nafter:\n%s", dump(before), dump(after))
	}
	if after.Status != before.Status {
		t.Errorf("a rejected status changed the ticket's status from %q to %q", before.Status, after.Status)
	}
	if got, err := a.Append(s.ctx, ref, nil); err != nil || len(got) != 0 {
		t.Errorf("Append of no messages = %v, %v; want nothing, nil", got, err)
	}
}

// tricky is a body that exercises what helpdesks like to mangle.
const tricky = "Grüße aus Zimmer 12 — Привет, 你好, مرحبا 🙏🏽\n" +
	"\n" +
	"**Bitte** _zwei_ `Handtücher`:\n" +
	"- one\n" +
	"- two\n" +
	"\n" +
	"> quoted line\n" +
	"    indented code\n" +
	"<b>not html</b> & \"quotes\" 'single' \\backslash\n" +
	"last line"

func (s *suite) testText(t *testing.T) {
	tk := s.ticket("Ünïcödé request — 🧺")
	a, ref := s.ensure(t, tk)
	m := s.message(1, guestapi.AuthorGuest, "Zoë Ærøskøbing", true)
	m.Body = tricky + "\n[run " + s.run + " " + m.UpstreamID + "]"
	if _, err := a.Append(s.ctx, ref, []adapters.Message{m}); err != nil {
		t.Fatalf("Append: %v", err)
	}
	snap := s.read(t, ref)
	find(t, snap, m.Body)

	c0 := s.drain(t, a, s.head)
	body := tricky + "\n[run " + s.run + " reply]"
	agentDo(t, "reply", s.h.Agent.Reply(s.ctx, ref, "Zoë (concierge)", body))
	evs, _ := s.collect(t, a, c0, []adapters.Ref{ref})
	if len(evs) != 1 {
		t.Fatalf("Changes after one reply: %d events, want 1: %+v", len(evs), evs)
	}
	checkAgentEvent(t, s.h.Caps, evs[0], adapters.EventReply, "Zoë (concierge)", body)
}

func (s *suite) testClosed(t *testing.T) {
	tk := s.ticket("Lost and found: umbrella")
	a, ref := s.ensure(t, tk)
	c0 := s.drain(t, a, s.head)
	for i, st := range []guestapi.Status{guestapi.StatusDone, guestapi.StatusCancelled} {
		if err := a.SetStatus(s.ctx, ref, st); err != nil {
			t.Fatalf("SetStatus(%s): %v", st, err)
		}
		m := s.message(i+1, guestapi.AuthorGuest, "Ada Guest", true)
		if _, err := a.Append(s.ctx, ref, []adapters.Message{m}); err != nil {
			t.Fatalf("Append to a ticket closed as %s: %v", st, err)
		}
		snap := s.read(t, ref)
		if !snap.Messages[find(t, snap, m.Body)].Public {
			t.Errorf("a public message on a closed ticket is not public")
		}
	}
	if evs, _ := s.collect(t, a, c0, []adapters.Ref{ref}); len(evs) != 0 {
		t.Errorf("Changes reported the bridge's own writes (a reopen?): %+v", evs)
	}
	f, ok, err := s.open(t).Lookup(s.ctx, tk.UpstreamID)
	if err != nil || !ok || f.Ref != ref {
		t.Errorf("Lookup = %+v, %v, %v; want the one ticket %q", f, ok, err, ref)
	}
}

func (s *suite) testConcurrent(t *testing.T) {
	hd := s.open(t)
	const n = 4
	var wg sync.WaitGroup
	refs := make([]adapters.Ref, n)
	msgs := make([]adapters.Message, n)
	for i := range n {
		tk := s.ticket(fmt.Sprintf("Concurrent request %d", i))
		msgs[i] = s.message(i, guestapi.AuthorGuest, "Ada Guest", true)
		wg.Go(func() {
			ref, err := hd.EnsureTicket(s.ctx, tk)
			if err != nil {
				t.Errorf("EnsureTicket %d: %v", i, err)
				return
			}
			if _, err := hd.Append(s.ctx, ref, []adapters.Message{msgs[i]}); err != nil {
				t.Errorf("Append %d: %v", i, err)
				return
			}
			if err := hd.SetStatus(s.ctx, ref, guestapi.StatusAssigned); err != nil {
				t.Errorf("SetStatus %d: %v", i, err)
			}
			refs[i] = ref
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for i, ref := range refs {
		for j := range i {
			if refs[j] == ref {
				t.Fatalf("tickets %d and %d share the Ref %q", j, i, ref)
			}
		}
		snap := s.read(t, ref)
		find(t, snap, msgs[i].Body)
		if want := s.h.Status.Down(guestapi.StatusAssigned); snap.Status != want {
			t.Errorf("ticket %d: status %q, want %q", i, snap.Status, want)
		}
	}
}
