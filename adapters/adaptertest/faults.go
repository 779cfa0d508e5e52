package adaptertest

import (
	"errors"
	"strings"
	"testing"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
)

// Faults makes the backend misbehave the way a real helpdesk does, for the
// cases that check how an adapter classifies failures. Each method takes
// effect at once, for every request of every adapter instance on the
// backend, until [Faults.Restore].
type Faults interface {
	// RefuseCredentials makes the helpdesk refuse the adapter's
	// credentials, as after a revoked token (HTTP 401).
	RefuseCredentials(t testing.TB)
	// Unavailable makes the helpdesk fail every request as in an outage
	// (HTTP 503). An HTTP backend echoes a credential in the answer's
	// body, as a misconfigured proxy may, so that the suite sees whether
	// the adapter lets it into an error.
	Unavailable(t testing.TB)
	// RateLimit makes the helpdesk refuse the next n requests as over its
	// rate limit (HTTP 429 with Retry-After), then serve again.
	RateLimit(t testing.TB, n int)
	// Restore ends every fault.
	Restore(t testing.TB)
}

// errText collects the texts of the errors a case met, for the secret
// check.
type errText struct{ texts []string }

func (e *errText) add(err error) error {
	if err != nil {
		e.texts = append(e.texts, err.Error())
	}
	return err
}

// checkSecrets fails t when a secret of the harness appears in an error
// text or in what the adapter logged.
func (s *suite) checkSecrets(t *testing.T, errs *errText) {
	t.Helper()
	var logs string
	if s.h.Logs != nil {
		logs = s.h.Logs()
	}
	for _, sec := range s.h.Secrets {
		if sec == "" {
			continue
		}
		for _, txt := range errs.texts {
			if strings.Contains(txt, sec) {
				t.Errorf("an error shows a credential: %s", txt)
			}
		}
		if strings.Contains(logs, sec) {
			t.Errorf("the adapter's log shows a credential")
		}
	}
}

func (s *suite) faults(t *testing.T) Faults {
	t.Helper()
	if s.h.Faults == nil {
		t.Skip("the harness injects no faults")
	}
	t.Cleanup(func() { s.h.Faults.Restore(t) })
	return s.h.Faults
}

// testAuthRefused: a refused credential is adapters.ErrAuth from every
// method, never a permanent input error, so the engine can stop the
// helpdesk side of its cycle with one clear error instead of failing each
// ticket.
func (s *suite) testAuthRefused(t *testing.T) {
	f := s.faults(t)
	tk := s.ticket("Extra pillow")
	hd, ref := s.ensure(t, tk)
	f.RefuseCredentials(t)
	fresh := s.open(t)
	var errs errText
	msg := s.message(1, guestapi.AuthorGuest, "Ada Guest", true)
	calls := []struct {
		what string
		err  error
	}{
		{"EnsureTicket", errs.add(func() error { _, err := fresh.EnsureTicket(s.ctx, s.ticket("Another pillow")); return err }())},
		{"Append", errs.add(func() error { _, err := hd.Append(s.ctx, ref, []adapters.Message{msg}); return err }())},
		{"SetStatus", errs.add(fresh.SetStatus(s.ctx, ref, guestapi.StatusInProgress))},
		{"Changes", errs.add(func() error { _, _, err := fresh.Changes(s.ctx, s.head); return err }())},
		{"Lookup", errs.add(func() error { _, _, err := fresh.Lookup(s.ctx, tk.UpstreamID); return err }())},
	}
	for _, c := range calls {
		if !errors.Is(c.err, adapters.ErrAuth) {
			t.Errorf("%s with refused credentials: %v, want an error matching adapters.ErrAuth", c.what, c.err)
		}
		if errors.Is(c.err, adapters.ErrInvalid) || errors.Is(c.err, adapters.ErrNotFound) {
			t.Errorf("%s with refused credentials: %v also matches ErrInvalid or ErrNotFound", c.what, c.err)
		}
	}
	s.checkSecrets(t, &errs)
}

// testOutageTemporary: an outage is a temporary error (neither ErrInvalid,
// ErrAuth nor ErrNotFound), and once the helpdesk is back the repeated
// call completes the work exactly once.
func (s *suite) testOutageTemporary(t *testing.T) {
	f := s.faults(t)
	_, ref := s.ensure(t, s.ticket("Ironing board"))
	msg := s.message(1, guestapi.AuthorGuest, "Ada Guest", true)
	f.Unavailable(t)
	hd := s.open(t)
	var errs errText
	_, err := hd.Append(s.ctx, ref, []adapters.Message{msg})
	errs.add(err)
	_, _, cerr := hd.Changes(s.ctx, s.head)
	errs.add(cerr)
	for what, e := range map[string]error{"Append": err, "Changes": cerr} {
		switch {
		case e == nil:
			t.Errorf("%s during an outage succeeded", what)
		case errors.Is(e, adapters.ErrInvalid), errors.Is(e, adapters.ErrAuth), errors.Is(e, adapters.ErrNotFound):
			t.Errorf("%s during an outage: %v, want a temporary error (not ErrInvalid, ErrAuth or ErrNotFound)", what, e)
		}
	}
	f.Restore(t)
	if _, err := hd.Append(s.ctx, ref, []adapters.Message{msg}); err != nil {
		t.Fatalf("Append after the outage: %v", err)
	}
	if n := count(s.read(t, ref), msg.Body); n != 1 {
		t.Errorf("the message shows %d times after the outage and a repeat, want once", n)
	}
	s.checkSecrets(t, &errs)
}

// testRateLimited: requests refused by the rate limit are waited out or
// fail temporarily; repeating until the call succeeds writes the message
// exactly once.
func (s *suite) testRateLimited(t *testing.T) {
	f := s.faults(t)
	_, ref := s.ensure(t, s.ticket("Late checkout"))
	msg := s.message(1, guestapi.AuthorGuest, "Ada Guest", true)
	hd := s.open(t)
	f.RateLimit(t, 3)
	var errs errText
	ok := false
	for range 5 {
		_, err := hd.Append(s.ctx, ref, []adapters.Message{msg})
		if err == nil {
			ok = true
			break
		}
		errs.add(err)
		if errors.Is(err, adapters.ErrInvalid) || errors.Is(err, adapters.ErrAuth) || errors.Is(err, adapters.ErrNotFound) {
			t.Fatalf("Append over the rate limit: %v, want success or a temporary error", err)
		}
	}
	if !ok {
		t.Fatalf("Append did not succeed after the rate limit passed: %v", errs.texts)
	}
	if n := count(s.read(t, ref), msg.Body); n != 1 {
		t.Errorf("the message shows %d times after the rate limit, want once", n)
	}
	s.checkSecrets(t, &errs)
}

// testArchived: a ticket the helpdesk archived (closed long ago, read
// only, left out of its lists) is still found after the bridge's state is
// lost, with the messages it holds, and a new message for it is kept
// without writing an old one twice.
func (s *suite) testArchived(t *testing.T) {
	if s.h.Archive == nil {
		t.Skip("the harness cannot archive tickets")
	}
	tk := s.ticket("Umbrella")
	a, ref := s.ensure(t, tk)
	old := s.message(1, guestapi.AuthorGuest, "Ada Guest", true)
	if _, err := a.Append(s.ctx, ref, []adapters.Message{old}); err != nil {
		t.Fatalf("Append: %v", err)
	}
	s.h.Archive(t, ref)
	b := s.open(t)
	s.settle(t)
	f, ok, err := b.Lookup(s.ctx, tk.UpstreamID)
	if err != nil || !ok {
		t.Fatalf("Lookup of an archived ticket on a fresh instance = %v, %v; want it found", ok, err)
	}
	if _, held := f.Messages[old.UpstreamID]; !held {
		t.Errorf("Lookup of an archived ticket: Messages %v lack %s", f.Messages, old.UpstreamID)
	}
	again, err := b.EnsureTicket(s.ctx, tk)
	if err != nil {
		t.Fatalf("EnsureTicket of an archived ticket: %v", err)
	}
	if again != f.Ref {
		t.Errorf("EnsureTicket of an archived ticket: %s, want the Ref Lookup found, %s", again, f.Ref)
	}
	msg := s.message(2, guestapi.AuthorGuest, "Ada Guest", true)
	got, err := b.Append(s.ctx, f.Ref, []adapters.Message{old, msg})
	if err != nil {
		t.Fatalf("Append to an archived ticket: %v", err)
	}
	if len(got) != 2 || !got[0].Existed || got[1].Existed {
		t.Errorf("Append to an archived ticket: %+v, want the old message existing and the new one added", got)
	}
}
