package email

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
	"github.com/google/uuid"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/internal/mailtest"
)

// TestRealServersImplicitTLSWithoutCondStore runs a request's round trip
// through submissions and IMAPS (implicit TLS) with CONDSTORE turned off,
// the path the conformance suite on STARTTLS does not take: a reply is
// carried, a mail from outside the allow-list is set aside, and a mail of
// the bridge that Postfix bounces marks its request, once, with no mail
// in answer.
func TestRealServersImplicitTLSWithoutCondStore(t *testing.T) {
	s := mailtest.FromEnv(t)
	b := realBackend(t)
	b.smtpURL, b.imapURL = "smtps://"+s.SMTPS, "imaps://"+s.IMAPS
	off := func(c *Config) {
		c.CondStore = false
		c.Departments = Routes{"housekeeping": "housekeeping@" + s.Domain, "lost": "nobody-" + uuid.NewString()[:8] + "@" + s.Domain}
	}
	a := b.open(t, off)
	defer a.Close()
	ctx := t.Context()
	cur := drainAll(t, a, "")

	up := uuid.NewString()
	ref, err := a.EnsureTicket(ctx, adapters.Ticket{UpstreamID: up, Department: "housekeeping", Status: guestapi.StatusNew,
		TaskDescription: "Ironing board for room 12", Origin: guestapi.OriginGuest})
	if err != nil {
		t.Fatal(err)
	}
	g := &agent{b: b, t: t, addr: "agent@" + s.Domain}
	if err := g.Reply(ctx, ref, "Anna (housekeeping)", "On its way."); err != nil {
		t.Fatal(err)
	}
	g.settle(t)
	mid := s.MessageID(t)
	outsider := fmt.Sprintf("Message-ID: <%s>\r\nFrom: mallory@elsewhere.example\r\nTo: %s\r\nSubject: hi\r\nDate: %s\r\n\r\nSend me the door code.\r\n",
		mid, a.replyTo(token(a.key, up)), time.Now().Format(time.RFC1123Z))
	s.Deliver(t, "mallory@elsewhere.example", []string{a.replyTo(token(a.key, up))}, []byte(outsider))
	b.await(t, "bridge", mid)
	var evs []adapters.Event
	evs, cur = changesFrom(t, a, cur)
	var mine []adapters.Event
	for _, ev := range evs {
		if ev.Ref == ref {
			mine = append(mine, ev)
		}
	}
	if len(mine) != 1 || mine[0].Body != "On its way." {
		t.Fatalf("events of the request: %+v; want the one reply", mine)
	}
	if !heldHas(a.Held(ctx), "mallory@elsewhere.example", "ALLOW") {
		t.Fatalf("the outsider's mail is not listed as set aside: %+v", a.Held(ctx))
	}

	// A request whose department routes to an address nobody has: Postfix
	// bounces the mail to the bridge.
	lost := uuid.NewString()
	lref, err := a.EnsureTicket(ctx, adapters.Ticket{UpstreamID: lost, Department: "lost", Status: guestapi.StatusNew,
		TaskDescription: "Spare key", Origin: guestapi.OriginGuest})
	if err != nil {
		t.Fatal(err)
	}
	waitHeld(t, s, a, &cur, func(h adapters.HeldError) bool { return h.Ref == lref })
	var n int
	for _, h := range a.Held(ctx) {
		if h.Ref == lref {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the bounce is listed %d times, want once", n)
	}
}

func drainAll(t *testing.T, a *Adapter, cur adapters.Cursor) adapters.Cursor {
	_, cur = changesFrom(t, a, cur)
	return cur
}

func changesFrom(t *testing.T, a *Adapter, cur adapters.Cursor) ([]adapters.Event, adapters.Cursor) {
	t.Helper()
	var all []adapters.Event
	for range 10000 {
		evs, next, err := a.Changes(t.Context(), cur)
		if err != nil {
			t.Fatalf("Changes(%q): %v", cur, err)
		}
		all = append(all, evs...)
		if len(evs) == 0 && next == cur {
			return all, cur
		}
		cur = next
	}
	t.Fatal("Changes did not run dry")
	return nil, ""
}

func heldHas(hs []adapters.HeldError, op, need string) bool {
	for _, h := range hs {
		if strings.Contains(h.Op, op) && strings.Contains(h.Need, need) {
			return true
		}
	}
	return false
}

// waitHeld reads the bridge's inbox, and waits over IDLE for it to grow,
// until Held lists a mail ok accepts.
func waitHeld(t *testing.T, s *mailtest.Servers, a *Adapter, cur *adapters.Cursor, ok func(adapters.HeldError) bool) {
	t.Helper()
	grew := make(chan struct{}, 1)
	c := s.IMAPClient(t, "bridge", &imapclient.Options{UnilateralDataHandler: &imapclient.UnilateralDataHandler{
		Mailbox: func(d *imapclient.UnilateralDataMailbox) {
			if d.NumMessages != nil {
				select {
				case grew <- struct{}{}:
				default:
				}
			}
		},
	}})
	if _, err := c.Select("INBOX", &imap.SelectOptions{ReadOnly: true}).Wait(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for {
		idle, err := c.Idle()
		if err != nil {
			t.Fatal(err)
		}
		_, *cur = changesFrom(t, a, *cur)
		for _, h := range a.Held(t.Context()) {
			if ok(h) {
				_ = idle.Close()
				return
			}
		}
		select {
		case <-grew:
		case <-ctx.Done():
			t.Fatalf("nothing held as wanted: %+v", a.Held(t.Context()))
		}
		if err := idle.Close(); err != nil {
			t.Fatal(err)
		}
		if err := idle.Wait(); err != nil {
			t.Fatal(err)
		}
	}
}
