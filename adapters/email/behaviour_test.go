package email

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/email/internal/memmail"
	"github.com/ticketbridge/ticketbridge/guestapi"
)

// world is one in-process mail system with a bridge that mailed one
// request to housekeeping.
type world struct {
	t   *testing.T
	b   *backend
	sys *memmail.System
	a   *Adapter
	ref adapters.Ref
	tok string
	cur adapters.Cursor
}

func newWorld(t *testing.T, mod func(*Config)) *world {
	b, sys := memBackend(t)
	w := &world{t: t, b: b, sys: sys, a: b.open(t, mod)}
	t.Cleanup(func() { _ = w.a.Close() })
	ref, err := w.a.EnsureTicket(t.Context(), adapters.Ticket{UpstreamID: "8f14e45f-ceea-467f-a5f5-8d6d2c1a9b21", Department: "housekeeping",
		Status: guestapi.StatusNew, TaskDescription: "Two extra pillows for room 214", Origin: guestapi.OriginGuest})
	if err != nil {
		t.Fatal(err)
	}
	w.ref, w.tok = ref, token([]byte(testKey), string(ref))
	w.cur = w.drain()
	return w
}

// mail delivers a mail to rcpt as the internet would, with the given
// header lines and body.
func (w *world) mail(rcpt string, header []string, body string) {
	w.t.Helper()
	raw := strings.Join(header, "\r\n") + "\r\n\r\n" + strings.ReplaceAll(body, "\n", "\r\n")
	if err := w.sys.Deliver(rcpt, []byte(raw)); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) replyAddr() string { return "bridge+" + w.tok + "@hotel.test" }

// header is a reply's header from "from" to the reply address; a line of
// extra replaces the line of the same field.
func (w *world) header(from string, extra ...string) []string {
	base := []string{
		"From: " + from, "To: " + w.replyAddr(), "Subject: Re: [GR 8f14e45f] Two extra pillows",
		"Date: " + time.Now().Format(time.RFC1123Z),
		fmt.Sprintf("Message-ID: <%d.%s@elsewhere.test>", time.Now().UnixNano(), strings.NewReplacer("@", ".", " ", "", "<", "", ">", "").Replace(from)),
		"Content-Type: text/plain; charset=utf-8",
	}
	var out []string
	for _, l := range base {
		key, _, _ := strings.Cut(l, ":")
		if !slices.ContainsFunc(extra, func(e string) bool { return strings.HasPrefix(e, key+":") }) {
			out = append(out, l)
		}
	}
	return append(out, extra...)
}

// drain reads Changes until dry and returns the events.
func (w *world) changes() []adapters.Event {
	w.t.Helper()
	var all []adapters.Event
	for range 100 {
		evs, next, err := w.a.Changes(w.t.Context(), w.cur)
		if err != nil {
			w.t.Fatalf("Changes: %v", err)
		}
		all = append(all, evs...)
		if next == w.cur && len(evs) == 0 {
			return all
		}
		w.cur = next
	}
	w.t.Fatal("Changes did not run dry")
	return nil
}

func (w *world) drain() adapters.Cursor { w.changes(); return w.cur }

// heldWith returns the held mails whose Need contains what.
func (w *world) heldWith(what string) []adapters.HeldError {
	var out []adapters.HeldError
	for _, h := range w.a.Held(w.t.Context()) {
		if strings.Contains(h.Need, what) {
			out = append(out, h)
		}
	}
	return out
}

// inFolder counts the mails of user's folder.
func (w *world) inFolder(user, folder string) int {
	w.t.Helper()
	c := w.b.imapDial(w.t, user)
	defer c.Close()
	if _, err := c.Select(folder, &imap.SelectOptions{ReadOnly: true}).Wait(); err != nil {
		w.t.Fatal(err)
	}
	uids, err := searchUIDs(c, &imap.SearchCriteria{})
	if err != nil {
		w.t.Fatal(err)
	}
	return len(uids)
}

func TestNotCarriedButSetAsideInView(t *testing.T) {
	w := newWorld(t, func(c *Config) { c.AuthservID = "mx.hotel.test" })
	const secret = "Please send the guest the door code 4711"
	cases := []struct {
		name   string
		rcpt   string
		header []string
		why    string
	}{
		{"sender off the allow-list", "", w.header("Mallory <mallory@elsewhere.test>"), "ALLOW"},
		{"auto-reply", "", w.header("agent@hotel.test", "Auto-Submitted: auto-replied"), "automatic"},
		{"vacation reply", "", w.header("agent@hotel.test", "Subject: Out of Office: back on Monday"), "automatic"},
		{"bulk", "", w.header("agent@hotel.test", "Precedence: bulk"), "automatic"},
		{"DMARC failed by the trusted server", "", append([]string{"Authentication-Results: mx.hotel.test; dmarc=fail header.from=hotel.test",
			"Authentication-Results: mx.hotel.test; dmarc=pass header.from=hotel.test"}, w.header("agent@hotel.test")...), "DMARC"},
		{"guessed reply address", "bridge+aaaaaaaaaaaaaaaaaaaaaaaa@hotel.test", w.header("agent@hotel.test"), "reply address"},
		{"no reply address", "bridge@hotel.test", w.header("agent@hotel.test"), "reply address"},
		{"unknown status", "", w.header("agent@hotel.test"), "status"},
	}
	taken := w.sys.Taken()
	for i, c := range cases {
		rcpt := c.rcpt
		if rcpt == "" {
			rcpt = w.replyAddr()
		}
		h := c.header
		if rcpt != w.replyAddr() {
			for j, l := range h {
				if strings.HasPrefix(l, "To: ") {
					h[j] = "To: " + rcpt
				}
			}
		}
		body := fmt.Sprintf("%s (%d)", secret, i)
		if c.name == "unknown status" {
			body = "#status finished\n" + body
		}
		w.mail(rcpt, h, body)
		if evs := w.changes(); len(evs) != 0 {
			t.Errorf("%s: carried as %+v", c.name, evs)
		}
		if got := w.heldWith(c.why); len(got) == 0 {
			t.Errorf("%s: not listed as held with %q: %+v", c.name, c.why, w.a.Held(t.Context()))
		}
	}
	if n := w.inFolder("bridge", DefaultSetAsideFolder); n != len(cases) {
		t.Errorf("%d mails in the set-aside folder, want %d", n, len(cases))
	}
	if got := w.a.SetAside(); got != uint64(len(cases)) {
		t.Errorf("SetAside() = %d, want %d", got, len(cases))
	}
	if w.sys.Taken() != taken {
		t.Errorf("the bridge sent %d mails answering what it set aside", w.sys.Taken()-taken)
	}
	f, _, err := w.b.open(t, nil).Lookup(t.Context(), string(w.ref))
	if err != nil || len(f.Events) != 0 {
		t.Errorf("Lookup lists %+v, %v: what was set aside must not pass for the team's events", f.Events, err)
	}
}

func TestDMARCTrustsOnlyTheTopmostHeaderOfTheNamedServer(t *testing.T) {
	w := newWorld(t, func(c *Config) { c.AuthservID = "mx.hotel.test" })
	// A sender's own header below the server's, and a top one of another
	// server: neither counts, the mail is carried.
	w.mail(w.replyAddr(), append([]string{"Authentication-Results: other.example; dmarc=fail"}, w.header("agent@hotel.test")...), "Pillows are on their way.")
	if evs := w.changes(); len(evs) != 1 || evs[0].Body != "Pillows are on their way." {
		t.Fatalf("a mail whose topmost Authentication-Results is another server's: %+v, want one reply", evs)
	}
}

func TestBounceMarksTheRequestOnceWithoutLoop(t *testing.T) {
	w := newWorld(t, nil)
	taken := w.sys.Taken()
	if err := w.sys.Deliver("bridge@hotel.test", dsnOf(w.a, w.ref, "dsn.1")); err != nil {
		t.Fatal(err)
	}
	for range 2 { // read again: no second mark, no send
		if evs := w.changes(); len(evs) != 0 {
			t.Fatalf("a bounce carried as %+v", evs)
		}
	}
	held := w.heldWith("came back")
	if len(held) != 1 || held[0].Ref != w.ref || !strings.Contains(held[0].Need, "5.1.1") {
		t.Fatalf("held after a bounce: %+v; want one naming the request %s and the server's reason", w.a.Held(t.Context()), w.ref)
	}
	if w.sys.Taken() != taken {
		t.Errorf("the bridge sent %d mails after a bounce", w.sys.Taken()-taken)
	}
}

// dsnOf is Postfix's bounce of the first mail of ref's thread, with the
// Message-ID <id@hotel.test>.
func dsnOf(a *Adapter, ref adapters.Ref, id string) []byte {
	orig := "Message-ID: <" + a.ids.root(string(ref)) + ">\r\n" + hTicket + ": " + string(ref) + "\r\nTo: housekeeping-old@hotel.test\r\n"
	return []byte(strings.Join([]string{
		"From: MAILER-DAEMON@hotel.test (Mail Delivery System)", "To: bridge@hotel.test",
		"Subject: Undelivered Mail Returned to Sender", "Auto-Submitted: auto-replied", "Message-ID: <" + id + "@hotel.test>",
		"MIME-Version: 1.0", `Content-Type: multipart/report; report-type=delivery-status; boundary="b"`, "",
		"--b", "Content-Type: text/plain", "", "I could not deliver your mail.", "",
		"--b", "Content-Type: message/delivery-status", "",
		"Reporting-MTA: dns; hotel.test", "", "Final-Recipient: rfc822; housekeeping-old@hotel.test", "Action: failed",
		"Status: 5.1.1", "Diagnostic-Code: smtp; 550 5.1.1 no such user", "",
		"--b", "Content-Type: text/rfc822-headers", "", orig,
		"--b--", "",
	}, "\r\n"))
}

func TestReplyQuotingTheWholeThreadCarriesOnlyTheNewText(t *testing.T) {
	w := newWorld(t, nil)
	quoted := "Done, two pillows are in room 214.\n\nOn Tue, 1 Dec 2026 at 09:12, Guest Requests <bridge@hotel.test> wrote:\n" +
		"> Two extra pillows for room 214\n>\n> Department: housekeeping\n>\n> " + strings.ReplaceAll(howToAnswer, "\n", "\n> ") + "\n\n-- \nAnna, housekeeping\n"
	w.mail(w.replyAddr(), w.header("Anna <agent@hotel.test>"), quoted)
	evs := w.changes()
	if len(evs) != 1 || evs[0].Body != "Done, two pillows are in room 214." || evs[0].Kind != adapters.EventReply {
		t.Fatalf("a reply quoting the thread became %+v; want only its new text", evs)
	}
}

func TestStatusWithTextAndNote(t *testing.T) {
	w := newWorld(t, nil)
	w.mail(w.replyAddr(), w.header("Anna <agent@hotel.test>"), "#status In Progress\nThe pillows come from the laundry.")
	w.mail(w.replyAddr(), w.header("Anna <agent@hotel.test>"), "#note\nFeather-free ones.")
	evs := w.changes()
	if len(evs) != 3 || evs[0].Kind != adapters.EventStatus || evs[0].Status != guestapi.StatusInProgress ||
		evs[1].Kind != adapters.EventNote || evs[1].Body != "The pillows come from the laundry." ||
		evs[2].Kind != adapters.EventNote || evs[2].Body != "Feather-free ones." {
		t.Fatalf("events %+v; want the status, its text as a note, and the note", evs)
	}
}

func TestOwnMailInTheInboxIsNotCarriedNorSetAside(t *testing.T) {
	w := newWorld(t, func(c *Config) { c.Departments = Routes{"housekeeping": "bridge@hotel.test"} })
	if _, err := w.a.EnsureTicket(t.Context(), adapters.Ticket{UpstreamID: "c9f0f895-fb98-4b91-9f6a-3f4b2d7e1a11", Department: "housekeeping",
		Status: guestapi.StatusNew, TaskDescription: "Iron", Origin: guestapi.OriginGuest}); err != nil {
		t.Fatal(err)
	}
	if evs := w.changes(); len(evs) != 0 {
		t.Fatalf("the bridge's own mail carried as %+v", evs)
	}
	if h := w.a.Held(t.Context()); len(h) != 0 {
		t.Fatalf("the bridge's own mail set aside: %+v", h)
	}
}

func TestUIDValidityChangeLosesAndDoublesNothing(t *testing.T) {
	w := newWorld(t, nil)
	w.mail(w.replyAddr(), w.header("Anna <agent@hotel.test>"), "First answer.")
	first := w.changes()
	w.changes() // the engine stored the cursor: the first is flagged carried
	w.mail(w.replyAddr(), w.header("Anna <agent@hotel.test>"), "Second answer.")
	// The server rebuilds the inbox: every mail gets a new UID under a new
	// UIDVALIDITY, keeping its flags.
	u := w.sys.User("bridge")
	c := w.b.imapDial(t, "bridge")
	if _, err := c.Select("INBOX", nil).Wait(); err != nil {
		t.Fatal(err)
	}
	uids, _ := searchUIDs(c, &imap.SearchCriteria{})
	mails, err := fetchRaw(c, uids)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.Logout().Wait()
	_ = c.Close()
	if err := u.Delete("INBOX"); err != nil {
		t.Fatal(err)
	}
	if err := u.Create("INBOX", nil); err != nil {
		t.Fatal(err)
	}
	for _, m := range mails {
		if _, err := u.Append("INBOX", strings.NewReader(string(m.Raw)), &imap.AppendOptions{Flags: m.Flags}); err != nil {
			t.Fatal(err)
		}
	}
	after := w.changes()
	if len(first) != 1 || len(after) != 1 || after[0].Body != "Second answer." || after[0].ID == first[0].ID {
		t.Fatalf("before the rebuild %+v, after %+v; want the first once and the second once", first, after)
	}
}

func TestPeekWritesNothing(t *testing.T) {
	w := newWorld(t, nil)
	w.mail(w.replyAddr(), w.header("Mallory <mallory@elsewhere.test>"), "Hello")
	w.mail(w.replyAddr(), w.header("Anna <agent@hotel.test>"), "Fine.")
	evs, _, err := w.a.PeekChanges(t.Context(), w.cur)
	if err != nil || len(evs) != 1 {
		t.Fatalf("PeekChanges = %+v, %v; want the one reply", evs, err)
	}
	if n := w.inFolder("bridge", DefaultSetAsideFolder); n != 0 {
		t.Errorf("PeekChanges set %d mails aside", n)
	}
}

func TestCrashBetweenSendAndCopySendsOnceMoreWithTheSameID(t *testing.T) {
	w := newWorld(t, nil)
	msg := adapters.Message{UpstreamID: "d3d94468-02a4-4b7d-9a3c-8f8e0c7e5f01", AuthorType: guestapi.AuthorGuest, AuthorName: "Ada", Body: "And a blanket?", Public: true, CreatedAt: time.Now()}
	if _, err := w.a.Append(t.Context(), w.ref, []adapters.Message{msg}); err != nil {
		t.Fatal(err)
	}
	// The copy is lost, as when the bridge died between the server's 250
	// and keeping it.
	c := w.b.imapDial(t, "bridge")
	if _, err := c.Select(DefaultSentFolder, nil).Wait(); err != nil {
		t.Fatal(err)
	}
	id := w.a.ids.message(string(w.ref), msg.UpstreamID)
	uids, _ := searchUIDs(c, &imap.SearchCriteria{Header: []imap.SearchCriteriaHeaderField{{Key: "Message-ID", Value: id}}})
	if err := c.Store(imap.UIDSetNum(uids...), &imap.StoreFlags{Op: imap.StoreFlagsAdd, Flags: []imap.Flag{imap.FlagDeleted}}, nil).Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Expunge().Close(); err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	for range 2 {
		if _, err := w.b.open(t, nil).Append(t.Context(), w.ref, []adapters.Message{msg}); err != nil {
			t.Fatal(err)
		}
	}
	ids := map[string]int{}
	for _, m := range (&agent{b: w.b, t: t}).mails("housekeeping") {
		mid := m.Header.Get("Message-Id")
		ids[mid]++
	}
	if n := ids["<"+id+">"]; n != 2 {
		t.Errorf("the message was delivered %d times, want 2: once, and once more after the lost copy", n)
	}
	distinct := 0
	for range ids {
		distinct++
	}
	if distinct != 2 { // the request's first mail and the message
		t.Errorf("%d distinct Message-IDs in the thread, want 2: %v", distinct, ids)
	}
}

// TestReplyToAMailSentButNotRecorded: the bridge was killed between the
// submission server's 250 for a request's first mail and its copy in the
// sent folder, and an agent answered that mail before the bridge sent it
// again. The reply carries the request, by the token checked against the
// ids of the thread the reply refers to, and is not set aside.
func TestReplyToAMailSentButNotRecorded(t *testing.T) {
	b, sys := memBackend(t)
	a := b.open(t, nil)
	defer a.Close()
	ctx := t.Context()
	ticket := "0b5e3c1a-3f0e-4d6c-9a51-7a8f8a3e2c10"
	tok := token(a.key, ticket)
	m := outMail{kind: kindTicket, ticket: ticket, to: "housekeeping@hotel.test", subject: "[GR 0b5e3c1a] Iron", id: a.ids.root(ticket),
		status: "new", date: time.Now(), body: "An iron, please.\n"}
	raw, err := build(m, a.cfg.FromName, string(a.cfg.Address), a.replyTo(tok), tok)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.smtp.Send(ctx, string(a.cfg.Address), []string{m.to}, raw); err != nil {
		t.Fatal(err)
	}
	// The bridge died here; the agent answers the mail.
	w := &world{t: t, b: b, sys: sys, a: a, tok: tok}
	w.mail(w.replyAddr(), w.header("agent@hotel.test", "In-Reply-To: <"+m.id+">", "References: <"+m.id+">"), "The iron is on its way.")
	evs := w.changes()
	if len(evs) != 1 || evs[0].Ref != adapters.Ref(ticket) || evs[0].Body != "The iron is on its way." {
		t.Fatalf("events: %+v; want the agent's reply to %s", evs, ticket)
	}
	if h := a.Held(ctx); len(h) != 0 {
		t.Fatalf("set aside: %+v", h)
	}
	// A reply whose token is not the thread's it refers to is still set
	// aside: the ids of References are no key.
	w.mail(w.replyAddr(), w.header("agent@hotel.test", "In-Reply-To: <"+a.ids.root("1d6f0c3e-0000-4000-8000-000000000000")+">"), "Hello.")
	_ = w.changes()
	w.mail("bridge+"+token(a.key, "another")+"@hotel.test", w.header("agent@hotel.test", "To: bridge+"+token(a.key, "another")+"@hotel.test", "References: <"+m.id+">"), "Hello.")
	if evs := w.changes(); len(evs) != 0 {
		t.Fatalf("events of mails whose token is not the thread's: %+v", evs)
	}
	if n := len(w.heldWith("reply address")); n != 2 {
		t.Errorf("%d mails set aside for want of a request, want 2: %+v", n, a.Held(ctx))
	}
}
