package email

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/emersion/go-message/mail"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver/refservertest"
	"github.com/ticketbridge/ticketbridge/internal/looptest"
	"github.com/ticketbridge/ticketbridge/internal/mailtest"
)

// The crash test runs each cycle as `ticketbridge once` with the email
// helpdesk on the real Postfix and Dovecot, and kills it with SIGKILL at
// a random moment (looptest.Crash), while the reference server (in this
// process) and the mail servers carry on. Guests write, and agents reply
// and write notes from their mail client, between the cycles. In the end
// the departments' mailboxes hold every guest message once and the
// reference server every agent mail once.
//
// Once means one Message-ID. A kill between the submission server's 250
// and the copy in the sent folder has the bridge send that mail again
// after its restart, with the same Message-ID, and a kill in that window
// of the resend sends it once more again: the test counts distinct
// Message-IDs, allows one mail at most one copy more than there were
// kills, and logs how many copies were resent.

const (
	mailCrashTickets = 16
	mailCrashCycles  = 24
)

// mailCrash is the email crash test's world.
type mailCrash struct {
	t     *testing.T
	s     *mailtest.Servers
	b     *backend
	g     *agent
	ts    *refservertest.TestServer
	kit   *looptest.Crash
	ids   []string
	depts map[string]string // upstream id -> the department's user
	roots map[string]bool   // upstream ids whose first mail an agent saw
	wrote []string          // the agents' texts, as upstream should hold them
	seq   int
	// killed is how many cycles were killed: each kill that falls between
	// the server's 250 and the sent folder's copy may send the mail in
	// flight once more, under the same Message-ID.
	killed int
}

func TestCrashLoop(t *testing.T) {
	s := mailtest.FromEnv(t)
	if testing.Short() {
		t.Skip("kills the bridge at random moments over many cycles")
	}
	b := realBackend(t)
	c := &mailCrash{t: t, s: s, b: b, g: &agent{b: b, t: t, addr: "agent@" + s.Domain}, ts: refservertest.New(t),
		depts: map[string]string{}, roots: map[string]bool{}}
	env := []string{
		"TICKETBRIDGE_API_URL=" + c.ts.URL, "TICKETBRIDGE_API_KEY=" + c.ts.Keys.TicketsWrite,
		"TICKETBRIDGE_STATE=" + filepath.Join(t.TempDir(), "state.db"), "TICKETBRIDGE_ADAPTER=email",
	}
	for k, v := range b.env() {
		switch k {
		case EnvPrefix + "PASSWORD", EnvPrefix + "TOKEN_KEY":
			env = append(env, k+"_FILE="+secretFile(t, k, v)) // as an operator gives secrets
		default:
			env = append(env, k+"="+v)
		}
	}
	c.kit = looptest.NewCrash(t, looptest.CrashOptions{Env: env})
	for i := range mailCrashTickets {
		dept := []string{"housekeeping", "maintenance", "frontdesk"}[i%3]
		tv, err := c.ts.Server.CreateTicket(c.ts.Org, refserver.NewTicket{Department: dept, TaskDescription: fmt.Sprintf("Request %d: pillows for room %d", i, 100+i)})
		if err != nil {
			t.Fatal(err)
		}
		c.ids = append(c.ids, tv.ID)
		c.depts[tv.ID] = dept // frontdesk is TO, the others are routed
		c.guest(tv.ID, fmt.Sprintf("First message of request %d.", i))
	}
	c.killed = c.kit.Run(mailCrashCycles, c.activity)
	c.kit.Finish(20, c.check)
}

// secretFile writes a secret into a file of the test's own, as an
// operator gives secrets to the daemon.
func secretFile(t *testing.T, name, secret string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func (c *mailCrash) guest(id, body string) {
	c.t.Helper()
	if _, err := c.ts.Server.AddMessage(id, refserver.ConsoleMessage{AuthorType: guestapi.AuthorGuest, AuthorName: "Ada Guest", Body: body}); err != nil {
		c.t.Fatal(err)
	}
}

// activity is what guests and agents do between two cycles: guests write,
// and agents answer the threads they have received.
func (c *mailCrash) activity() {
	c.t.Helper()
	rnd := c.kit.Rand
	for range 4 {
		c.seq++
		c.guest(c.ids[rnd.IntN(len(c.ids))], fmt.Sprintf("Guest message %d: could I have %d more pillows?", c.seq, rnd.IntN(5)+1))
	}
	for range 2 {
		c.seq++
		id := c.ids[rnd.IntN(len(c.ids))]
		if !c.roots[id] {
			if root, _, _, _ := c.g.root(adapters.Ref(id)); root == "" {
				continue // not mailed (or not delivered) yet
			}
			c.roots[id] = true
		}
		body := fmt.Sprintf("Agent answer %d: on its way.", c.seq)
		do := c.g.Reply
		if rnd.IntN(3) == 0 {
			body = fmt.Sprintf("Agent note %d: told housekeeping.", c.seq)
			do = c.g.Note
		}
		if err := do(c.t.Context(), adapters.Ref(id), "Anna", body); err != nil {
			c.t.Fatal(err)
		}
		c.wrote = append(c.wrote, body)
	}
}

// check verifies exactly once on both sides, by distinct Message-ID in
// the departments' mailboxes: a duplicate fails the test at once; what is
// missing is counted, and fails it only when final.
func (c *mailCrash) check(final bool) int {
	t := c.t
	missing := 0
	lacks := func(format string, args ...any) {
		missing++
		if final {
			t.Errorf(format, args...)
		}
	}
	ours := map[string]bool{}
	for _, id := range c.ids {
		ours[id] = true
	}
	// copies counts the mails delivered under each Message-ID; roots and
	// mirrors the distinct ids of each thread's first mail and of each
	// upstream message's mirror.
	copies := map[string]int{}
	roots := map[string]map[string]bool{}
	mirrors := map[string]map[string]bool{}
	add := func(m map[string]map[string]bool, k, id string) {
		if m[k] == nil {
			m[k] = map[string]bool{}
		}
		m[k][id] = true
	}
	for _, user := range []string{"frontdesk", "housekeeping", "maintenance"} {
		for _, m := range c.g.mails(user) {
			ticket := m.Header.Get(hTicket)
			if !ours[ticket] {
				continue
			}
			if c.depts[ticket] != user {
				t.Fatalf("request %s (%s) was mailed to %s", ticket, c.depts[ticket], user)
			}
			id, _ := (&mail.Header{Header: m.Header}).MessageID()
			copies[id]++
			switch m.Header.Get(hKind) {
			case kindTicket:
				add(roots, ticket, id)
			case kindMessage:
				add(mirrors, m.Header.Get(hMessage), id)
			}
		}
	}
	resent, most := 0, 1
	for id, n := range copies {
		if n > 1+c.killed {
			t.Fatalf("mail <%s> was delivered %d times after %d kills; each kill may resend the mail in flight once, no more", id, n, c.killed)
		}
		resent += n - 1
		most = max(most, n)
	}
	upBodies := map[string]int{}
	guestMsgs := 0
	for _, id := range c.ids {
		switch n := len(roots[id]); {
		case n > 1:
			t.Fatalf("request %s has %d first mails with distinct Message-IDs, want 1", id, n)
		case n == 0:
			lacks("request %s has no mail in %s's mailbox", id, c.depts[id])
			continue
		}
		view, err := c.ts.Server.Ticket(id)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range view.Messages {
			upBodies[m.Body]++
			n := len(mirrors[m.ID])
			switch {
			case m.External && n != 0:
				t.Fatalf("request %s: the bridge's own post %q was mailed back to the department %d times", id, m.Body, n)
			case !m.External && n > 1:
				t.Fatalf("request %s: guest message %q was mailed under %d distinct Message-IDs, want 1", id, m.Body, n)
			case !m.External && n == 0:
				lacks("request %s: guest message %q is not in %s's mailbox", id, m.Body, c.depts[id])
			case !m.External:
				guestMsgs++
			}
		}
	}
	for _, body := range c.wrote {
		switch n := upBodies[body]; {
		case n > 1:
			t.Fatalf("the agent's %q is upstream %d times, want once", body, n)
		case n == 0:
			lacks("the agent's %q is not upstream", body)
		}
	}
	if final {
		t.Logf("checked %d requests: %d guest messages mailed once each (by distinct Message-ID; %d copies resent with the same Message-ID after kills between the 250 and the copy, at most %d of one mail, over %d kills), %d agent mails upstream once each",
			len(c.ids), guestMsgs, resent, most, c.killed, len(c.wrote))
	}
	return missing
}
