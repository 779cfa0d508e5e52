package sync_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/state"
	tbsync "github.com/ticketbridge/ticketbridge/sync"
)

// connect applies an operator's connect of request id to ticket ref.
func (e *env) connect(id string, ref adapters.Ref) (tbsync.Done, error) {
	e.t.Helper()
	return tbsync.Apply(e.t.Context(), e.store, tbsync.Command{Name: tbsync.CommandConnect, Ticket: id, Ref: string(ref), Who: "cli:mara"}, e.clock.Now())
}

// countIn counts the messages of ticket ref that hold text.
func (e *env) countIn(ref adapters.Ref, text string) int {
	n := 0
	for _, m := range e.backend.Messages(ref) {
		if strings.Contains(m.Body, text) {
			n++
		}
	}
	return n
}

// TestConnectToATicketMadeByHand: a request the bridge does not track
// yet, connected to a ticket the team made by hand, is mirrored into it
// and nowhere else: the guest's message the ticket lacks is appended once,
// what the ticket held stays once, the team's reply written there before
// the connect is set aside (not sent), and one written after goes up once.
func TestConnectToATicketMadeByHand(t *testing.T) {
	e := newEnv(t)
	e.open()
	id := e.newTicket("towels by phone")
	const byHand, before, after = "The guest called for towels.", "Called the guest back.", "Towels are on their way."
	ref := e.backend.MakeTicket("Anna", "Towels, room 12", byHand)
	if _, err := e.backend.Reply(ref, "Anna", before); err != nil {
		t.Fatal(err)
	}
	d, err := e.connect(id, ref)
	if err != nil {
		t.Fatal(err)
	}
	if d.Ticket.ConnectRef != string(ref) || d.Ticket.Ref != "" {
		t.Fatalf("connected record: %+v", d.Ticket)
	}
	e.quiesce()
	if refs := e.backend.Find(id); len(refs) != 1 || refs[0] != ref {
		t.Fatalf("the request's helpdesk tickets: %v, want %s alone", refs, ref)
	}
	if tk := e.stateTicket(id); tk.Ref != string(ref) || tk.ConnectRef != "" {
		t.Errorf("record after the connect: ref %q, connecting %q", tk.Ref, tk.ConnectRef)
	}
	if n := e.countIn(ref, "first message of towels by phone"); n != 1 {
		t.Errorf("the guest's message is in the ticket %d times, want 1", n)
	}
	if n := e.countIn(ref, byHand); n != 1 {
		t.Errorf("the ticket's own first message is there %d times, want 1", n)
	}
	if e.upstreamHas(id, before) {
		t.Error("a reply written before the connect was sent to the guest")
	}
	if en := entry(t, e.store, id, before); en.State != state.Abandoned || !strings.Contains(en.LastError, "before it was connected") {
		t.Errorf("the reply before the connect: %+v, want set aside", en)
	}
	if _, err := e.backend.Reply(ref, "Anna", after); err != nil {
		t.Fatal(err)
	}
	e.guest(id, "Thank you!")
	e.quiesce()
	if n := e.upstreamCount(id, after); n != 1 {
		t.Errorf("the reply after the connect went up %d times, want 1", n)
	}
	if n := e.countIn(ref, "Thank you!"); n != 1 {
		t.Errorf("the guest's later message is in the ticket %d times, want 1", n)
	}
}

// TestConnectRefusals: a linked request is refused (unlink it first), as
// a reference that is no line of text; a ticket the helpdesk does not
// have fails the request, with why, and creates nothing, until it is
// connected to one it has.
func TestConnectRefusals(t *testing.T) {
	e := newEnv(t)
	linked := e.newTicket("linked")
	e.quiesce()
	if _, err := e.connect(linked, e.ref(linked)); !errors.Is(err, tbsync.ErrNotActionable) || !strings.Contains(err.Error(), "already") {
		t.Errorf("connect of a linked request to its ticket: %v", err)
	}
	if _, err := e.connect(linked, "mem-77"); !errors.Is(err, tbsync.ErrNotActionable) || !strings.Contains(err.Error(), "unlink it first") {
		t.Errorf("connect of a linked request to another ticket: %v", err)
	}
	id := e.newTicket("wrong ticket")
	for _, bad := range []adapters.Ref{"", " ", "a\nb", adapters.Ref(strings.Repeat("x", tbsync.MaxConnectRef+1))} {
		if _, err := e.connect(id, bad); !errors.Is(err, tbsync.ErrBadRef) {
			t.Errorf("connect to %q: %v, want ErrBadRef", bad, err)
		}
	}
	if _, err := e.connect(id, "mem-999"); err != nil {
		t.Fatal(err)
	}
	e.tick()
	e.tick()
	if refs := e.backend.Find(id); len(refs) != 0 {
		t.Fatalf("a refused connect made helpdesk tickets %v", refs)
	}
	if tk := e.stateTicket(id); tk.Attempts == 0 || !strings.Contains(tk.LastError, "connect helpdesk ticket mem-999") || !strings.Contains(tk.LastError, "unlink it") {
		t.Errorf("the request after a refused connect: %+v", tk)
	}
	ref := e.backend.MakeTicket("Anna", "The right one", "")
	if _, err := e.connect(id, ref); err != nil {
		t.Fatal(err)
	}
	e.quiesce()
	if refs := e.backend.Find(id); len(refs) != 1 || refs[0] != ref {
		t.Errorf("after the second connect: tickets %v, want %s", refs, ref)
	}
}

// TestUnlinkThenConnectBack: an unlinked request connected to its own
// ticket again keeps what state knew of it: nothing is mirrored twice,
// the guest's message written while unlinked is appended once, and the
// team's reply written there while unlinked is set aside, not sent.
func TestUnlinkThenConnectBack(t *testing.T) {
	e := newEnv(t)
	id := e.newTicket("back again")
	e.quiesce()
	ref := e.ref(id)
	e.command(tbsync.CommandUnlink, id)
	e.tick()
	const guest, meanwhile = "Is anyone there?", "Written while unlinked."
	e.guest(id, guest)
	if _, err := e.backend.Reply(ref, "Anna", meanwhile); err != nil {
		t.Fatal(err)
	}
	if err := e.backend.SetStatus(ref, "Anna", "working"); err != nil {
		t.Fatal(err)
	}
	e.tick()
	if _, err := e.connect(id, ref); err != nil {
		t.Fatal(err)
	}
	e.quiesce()
	if got := e.upstream(id).Ticket.Status; got != "new" {
		t.Errorf("the status set while unlinked went up: upstream %s, want new", got)
	}
	if got := e.hdStatus(id); got == "working" {
		t.Errorf("the helpdesk keeps the status set while unlinked, want the platform's")
	}
	if n := e.countIn(ref, guest); n != 1 {
		t.Errorf("the guest's message written while unlinked: %d times in the ticket, want 1", n)
	}
	if n := e.countIn(ref, "first message of back again"); n != 1 {
		t.Errorf("the first message: %d times, want 1", n)
	}
	if e.upstreamHas(id, meanwhile) {
		t.Error("a reply written while unlinked went up")
	}
	if tk := e.stateTicket(id); !tk.Unlinked.IsZero() || tk.ConnectRef != "" || tk.Ref != string(ref) {
		t.Errorf("record after connecting back: %+v", tk)
	}
}

// TestConnectElsewhereWhileTheOldTicketHoldsTheRequest: a request
// unlinked from one ticket and connected to another, while the first
// still holds its id, is refused by the helpdesk; meanwhile the first
// ticket is not adopted again, and a reply written there does not reach
// the guest.
func TestConnectElsewhereWhileTheOldTicketHoldsTheRequest(t *testing.T) {
	e := newEnv(t)
	id := e.newTicket("moved")
	e.quiesce()
	old := e.ref(id)
	e.command(tbsync.CommandUnlink, id)
	e.tick()
	other := e.backend.MakeTicket("Anna", "Made by hand", "")
	if _, err := e.connect(id, other); err != nil {
		t.Fatal(err)
	}
	const reply = "Written on the old ticket."
	if _, err := e.backend.Reply(old, "Anna", reply); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		e.tick()
	}
	if e.upstreamHas(id, reply) {
		t.Error("a reply on the old ticket reached the guest while a connect waited")
	}
	tk := e.stateTicket(id)
	if tk.Ref != "" || tk.ConnectRef != string(other) || !strings.Contains(tk.LastError, "mirrors that request") {
		t.Errorf("the request after a refused connect: ref %q, connecting %q, error %q", tk.Ref, tk.ConnectRef, tk.LastError)
	}
}

// TestConnectDuringACycleHolds: a connect back given while a cycle
// writes the unlink's note is kept by what the cycle stores: the next
// cycle links the request back, and the reply written while it was
// unlinked is set aside.
func TestConnectDuringACycleHolds(t *testing.T) {
	e := newEnv(t)
	id := e.newTicket("back mid-cycle")
	e.quiesce()
	ref := e.ref(id)
	const meanwhile = "Written while unlinked."
	armed := false
	e.wrapHD = func(h adapters.Helpdesk) adapters.Helpdesk {
		return appendHook{Helpdesk: h, hook: func() {
			if armed {
				armed = false
				if _, err := e.backend.Reply(ref, "Anna", meanwhile); err != nil {
					t.Error(err)
				}
				if _, err := e.connect(id, ref); err != nil {
					t.Error(err)
				}
			}
		}}
	}
	e.open()
	e.command(tbsync.CommandUnlink, id)
	armed = true
	e.tick() // writes the note, and the connect comes meanwhile
	if armed {
		t.Fatal("the cycle appended nothing: the connect was not given during it")
	}
	if tk := e.stateTicket(id); !tk.Unlinked.IsZero() || tk.ConnectRef != string(ref) {
		t.Fatalf("a connect given during a cycle was lost: unlinked %v, connecting %q", tk.Unlinked, tk.ConnectRef)
	}
	e.quiesce()
	if e.upstreamHas(id, meanwhile) {
		t.Error("the reply written while unlinked went up")
	}
	if tk := e.stateTicket(id); tk.ConnectRef != "" || tk.Ref != string(ref) {
		t.Errorf("not linked back: ref %q, connecting %q: %+v", tk.Ref, tk.ConnectRef, tk)
	}
}

// noConnect is a helpdesk that cannot connect (as the webhook and email
// helpdesks, whose tickets are named by the request's id).
type noConnect struct{ adapters.Helpdesk }

// TestConnectBackWithoutConnector: on a helpdesk that cannot connect a
// ticket made by hand, an unlinked request is still connected back to
// its own ticket: the guest's message written meanwhile crosses once,
// the reply written meanwhile is set aside. A connect to another ticket
// fails the request with why, and creates nothing.
func TestConnectBackWithoutConnector(t *testing.T) {
	e := newEnv(t)
	e.wrapHD = func(h adapters.Helpdesk) adapters.Helpdesk { return noConnect{h} }
	id := e.newTicket("no connector")
	e.quiesce()
	ref := e.ref(id)
	e.command(tbsync.CommandUnlink, id)
	e.tick()
	const guest, meanwhile = "Still there?", "Written while unlinked."
	e.guest(id, guest)
	if _, err := e.backend.Reply(ref, "Anna", meanwhile); err != nil {
		t.Fatal(err)
	}
	e.tick()
	if _, err := e.connect(id, ref); err != nil {
		t.Fatal(err)
	}
	e.quiesce()
	if n := e.countIn(ref, guest); n != 1 || e.upstreamHas(id, meanwhile) {
		t.Errorf("connected back: guest's message %d times in the ticket (want 1), reply written meanwhile upstream %v", n, e.upstreamHas(id, meanwhile))
	}
	if tk := e.stateTicket(id); tk.ConnectRef != "" || tk.Ref != string(ref) || tk.LastError != "" {
		t.Errorf("record after connecting back: ref %q, connecting %q, error %q", tk.Ref, tk.ConnectRef, tk.LastError)
	}

	other := e.newTicket("by hand elsewhere")
	byHand := e.backend.MakeTicket("Anna", "By hand", "")
	if _, err := e.connect(other, byHand); err != nil {
		t.Fatal(err)
	}
	e.tick()
	e.tick()
	if tk := e.stateTicket(other); !strings.Contains(tk.LastError, "cannot connect a ticket made by hand") || len(e.backend.Find(other)) != 0 {
		t.Errorf("a connect on a helpdesk without Connect: error %q, tickets %v", tk.LastError, e.backend.Find(other))
	}
}

// TestConnectOfALeftOutRequestSaysWhy: a connect of a request the rules
// leave out cannot be carried out; the request is listed as failing,
// naming the rule, and nothing is written to the ticket. Once the rules
// take it in, the connect is carried out.
func TestConnectOfALeftOutRequestSaysWhy(t *testing.T) {
	e, _ := rulesEnv(t)
	e.cfg.ExcludeDepartments = tbsync.Departments{"maintenance"}
	id := e.requestIn("maintenance", guestapi.OriginGuest, "dripping tap")
	e.cycle()
	ref := e.backend.MakeTicket("Anna", "Tap, room 12", "The guest called about the tap.")
	if _, err := e.connect(id, ref); err != nil {
		t.Fatal(err)
	}
	e.cycle()
	if tk := e.stateTicket(id); !strings.Contains(tk.LastError, "TICKETBRIDGE_EXCLUDE_DEPARTMENTS") || !strings.Contains(tk.LastError, "department maintenance") || tk.ConnectRef != string(ref) {
		t.Errorf("record of the waiting connect: error %q, connecting %q", tk.LastError, tk.ConnectRef)
	}
	if n := e.countIn(ref, "dripping tap"); n != 0 {
		t.Errorf("the left-out request's message is in the ticket %d times", n)
	}
	e.cfg.ExcludeDepartments = nil
	e.open()
	e.quiesce()
	if tk := e.stateTicket(id); tk.Ref != string(ref) || tk.LastError != "" {
		t.Errorf("after the rules took it in: ref %q, error %q", tk.Ref, tk.LastError)
	}
}

// TestRelinkSetsAsideOnlyWhatIsNew: a request connected to a ticket made
// by hand, unlinked, then connected back, sets aside the team's earlier
// messages once: the relink's trail counts only what it set aside itself.
func TestRelinkSetsAsideOnlyWhatIsNew(t *testing.T) {
	e := newEnv(t)
	e.open()
	id := e.newTicket("towels by phone")
	const before = "Called the guest back."
	ref := e.backend.MakeTicket("Anna", "Towels, room 12", "The guest called for towels.")
	if _, err := e.backend.Reply(ref, "Anna", before); err != nil {
		t.Fatal(err)
	}
	if _, err := e.connect(id, ref); err != nil {
		t.Fatal(err)
	}
	e.quiesce()
	e.command(tbsync.CommandUnlink, id)
	e.quiesce()
	if _, err := e.connect(id, ref); err != nil {
		t.Fatal(err)
	}
	e.quiesce()
	if tk := e.stateTicket(id); tk.Ref != string(ref) || tk.ConnectRef != "" {
		t.Fatalf("record after the relink: ref %q, connecting %q", tk.Ref, tk.ConnectRef)
	}
	var connects []string
	setAside := 0
	if err := e.store.View(t.Context(), func(tx *state.Tx) error {
		as, err := tx.AuditTrail(id)
		for _, a := range as {
			switch {
			case a.Kind == tbsync.CommandConnect && strings.HasPrefix(a.Detail, "connected;"):
				connects = append(connects, a.Detail)
			case a.Outcome == state.AuditAbandoned && a.Kind == string(adapters.EventReply):
				setAside++
			}
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"connected; 2 replies and notes already on it set aside", "connected; 0 replies and notes already on it set aside"}; !slices.Equal(connects, want) {
		t.Errorf("the connects' trail: %q, want %q", connects, want)
	}
	if setAside != 2 { // the ticket's first message and the reply
		t.Errorf("the team's earlier messages were set aside %d times in the trail, want 2", setAside)
	}
	if e.upstreamHas(id, before) {
		t.Error("the reply written before the first connect was sent to the guest")
	}
}
