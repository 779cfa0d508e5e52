// Package adaptertest is the conformance suite every helpdesk adapter runs
// against its backend: an in-memory helpdesk, a folder, a Request Tracker in
// a container, a fake Zendesk on in-memory connections.
//
// An adapter's test builds a [Harness] — how to open a fresh adapter on the
// backend, an [Agent] that acts in the helpdesk as a member of the support
// team would, and what the adapter can do — and calls [Run], or
// [RunInBubbles] for a fake whose time must pass. The suite checks
// the contract of [adapters.Helpdesk]: idempotent creates and appends, public
// versus internal messages, author and time in the mirrored text, statuses
// both ways, cursors, own writes never reported, lookup after the bridge's
// state is lost, errors for unknown tickets and bad input, text kept
// intact, files an agent attaches noted in the helpdesk as not sent (when
// the Agent is an [Attacher]), the platform's fields kept current (for an
// adapter that is an [adapters.Updater]), and, where the harness can make the
// backend fail, refused credentials as adapters.ErrAuth, outages and rate
// limits as temporary
// errors that a repeat completes once, no credential in any error or log,
// archived tickets found again, and a ticket made by hand connected to
// an upstream ticket (for an adapter that is an [adapters.Connector]).
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
	"testing"
	"testing/synctest"
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
	// NoStatus: the helpdesk cannot tell its tickets' status (a one-way
	// receiver), and Lookup says so with adapters.NoStatus.
	NoStatus bool
	// Events: Lookup lists the team's replies and notes on the ticket in
	// Found.Events, as Changes reports them. Without it Found.Events is
	// nil.
	Events bool
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
	// Unsearchable are the helpdesk statuses in which Lookup cannot find
	// a ticket (Request Tracker leaves deleted tickets out of every
	// search): LookupStatus checks that Lookup says so rather than
	// reporting them.
	Unsearchable []string
	// UnknownRef is a well-formed Ref of a ticket the helpdesk does not
	// have. Empty means "no-such-ticket-<uuid>".
	UnknownRef adapters.Ref
	// Settle, when set, is called before the suite reads through the
	// adapter what it has just written (Changes, Lookup), for helpdesks
	// whose search lags behind their writes.
	Settle func(t testing.TB)
	// Late, when set, runs act as a write the helpdesk commits late: the
	// changes act makes carry a time before the adapter's last poll, and
	// become visible only after it (Request Tracker's late commits, clocks
	// a little apart). ChangesLateCommit checks that the cursor still
	// reports them, once. A harness on a fake stamps act's writes in the
	// past (the clock of a testing/synctest bubble cannot go back).
	Late func(t testing.TB, act func())
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
	// Fields configures the case FieldsUpdate (adapters that implement
	// adapters.Updater); an Agent that is a [FieldReader] lets it check
	// the ticket's own fields too.
	Fields FieldsHarness
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
	s := newSuite(t, h)
	for _, c := range s.cases() {
		t.Run(c.name, c.f)
	}
}

// RunInBubbles runs the suite as [Run] does, but each case in a
// testing/synctest bubble of its own, on a fresh backend that open makes
// inside it. It is for fakes of helpdesks whose time must pass: an export
// that leaves out its last minute, a rate limit's window. Served on
// in-memory connections (testutil.PipeServer), such a fake and its adapter
// run on the bubble's clock, which moves when the adapter waits and when
// the harness's Settle sleeps, and a harness's Late cannot set it back:
// its fake stamps the act's writes in the past itself.
func RunInBubbles(t *testing.T, open func(t *testing.T) Harness) {
	t.Helper()
	for i, c := range (&suite{}).cases() {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				newSuite(t, open(t)).cases()[i].f(t)
			})
		})
	}
}

// newSuite checks h and reads the backend's cursor to its end.
func newSuite(t *testing.T, h Harness) *suite {
	t.Helper()
	if h.New == nil || h.Agent == nil {
		t.Fatal("adaptertest: Harness.New and Harness.Agent are required")
	}
	if len(h.Status.ToHelpdesk) == 0 {
		t.Fatal("adaptertest: Harness.Status.ToHelpdesk is empty")
	}
	s := &suite{h: h, run: uuid.NewString()[:8], ctx: t.Context()}
	s.head = s.drain(t, s.open(t), "")
	return s
}

// cases are the suite's cases, in order.
func (s *suite) cases() []struct {
	name string
	f    func(t *testing.T)
} {
	return []struct {
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
		{"LookupStatus", s.testLookupStatus},
		{"ChangesCursor", s.testCursor},
		{"ChangesLateCommit", s.testLateCommit},
		{"OwnWritesFiltered", s.testOwnWrites},
		{"LookupAfterStateLoss", s.testLookup},
		{"LookupEvents", s.testLookupEvents},
		{"UnknownRef", s.testUnknownRef},
		{"BadInput", s.testBadInput},
		{"TextPreserved", s.testText},
		{"ClosedTicket", s.testClosed},
		{"ConcurrentTickets", s.testConcurrent},
		{"AuthRefused", s.testAuthRefused},
		{"OutageTemporary", s.testOutageTemporary},
		{"RateLimited", s.testRateLimited},
		{"ArchivedTicket", s.testArchived},
		{"AttachmentsNoted", s.testAttachments},
		{"FieldsUpdate", s.testFieldsUpdate},
		{"Connect", s.testConnect},
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
