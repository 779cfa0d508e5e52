package adaptertest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/adaptertest"
	"github.com/ticketbridge/ticketbridge/adapters/memory"
	"github.com/ticketbridge/ticketbridge/guestapi"
)

// agent acts on a memory backend.
type agent struct{ b *memory.Backend }

func (a agent) Reply(_ context.Context, ref adapters.Ref, author, body string) error {
	_, err := a.b.Reply(ref, author, body)
	return err
}

func (a agent) Note(_ context.Context, ref adapters.Ref, author, body string) error {
	_, err := a.b.Note(ref, author, body)
	return err
}

func (a agent) MakeTicket(_ context.Context, subject, body string) (adapters.Ref, error) {
	return a.b.MakeTicket("Anna", subject, body), nil
}

func (a agent) SetStatus(_ context.Context, ref adapters.Ref, author, status string) error {
	return a.b.SetStatus(ref, author, status)
}

func (a agent) Read(_ context.Context, ref adapters.Ref) (adaptertest.Snapshot, error) {
	t, ok := a.b.Ticket(ref)
	if !ok {
		return adaptertest.Snapshot{}, adapters.ErrNotFound
	}
	snap := adaptertest.Snapshot{Status: t.Status}
	for _, m := range t.Messages {
		snap.Messages = append(snap.Messages, adaptertest.SnapshotMessage{Text: m.Text(), Public: m.Public})
	}
	return snap, nil
}

// broken wraps the memory adapter with one flaw each; the suite must catch
// every one of them in the named case.
type broken struct {
	adapters.Helpdesk
	flaw   string
	faults *faultState

	mu  *sync.Mutex
	own *[]adapters.Event // own writes, for the echo flaw
}

var flaws = map[string]string{
	"forgets-existing":  "AppendIdempotent",
	"duplicates":        "EnsureTicketIdempotent",
	"echoes":            "OwnWritesFiltered",
	"ascii-only":        "TextPreserved",
	"skips-bad":         "BadInput",
	"all-public":        "PublicAndInternal",
	"no-author":         "AuthorTypeAndTimeVisible",
	"repeats":           "ChangesCursor",
	"auth-as-temporary": "AuthRefused",
	"outage-as-invalid": "OutageTemporary",
	"leaks-secret":      "OutageTemporary",
	"drops-on-429":      "RateLimited",
	"forgets-archived":  "ArchivedTicket",
	"connect-writes":    "Connect",
}

// secret stands for the credential of the memory harness.
const secret = "memory-secret-token-5f1c"

var (
	errOutage      = errors.New("memory helpdesk unavailable (503)")
	errRateLimited = errors.New("memory helpdesk rate limit (429)")
)

// faultState is what the harness's Faults set, shared by every instance.
type faultState struct {
	mu       sync.Mutex
	mode     string // "", "auth", "outage", "ratelimit"
	n        int    // requests left to refuse in "ratelimit"
	archived map[adapters.Ref]bool
}

func (f *faultState) RefuseCredentials(testing.TB)  { f.set("auth", 0) }
func (f *faultState) Unavailable(testing.TB)        { f.set("outage", 0) }
func (f *faultState) RateLimit(_ testing.TB, n int) { f.set("ratelimit", n) }
func (f *faultState) Restore(testing.TB)            { f.set("", 0) }

func (f *faultState) set(mode string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mode, f.n = mode, n
}

func (f *faultState) isArchived(ref adapters.Ref) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.archived[ref]
}

// fail is the error of one call under the current fault.
func (f *faultState) fail() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch f.mode {
	case "auth":
		return fmt.Errorf("memory helpdesk: %w", adapters.ErrAuth)
	case "outage":
		return errOutage
	case "ratelimit":
		if f.n > 0 {
			f.n--
			return errRateLimited
		}
	}
	return nil
}

// faulty is the memory adapter behind a helpdesk that can fail.
type faulty struct {
	adapters.Helpdesk
	f *faultState
}

func (h faulty) EnsureTicket(ctx context.Context, t adapters.Ticket) (adapters.Ref, error) {
	if err := h.f.fail(); err != nil {
		return "", err
	}
	return h.Helpdesk.EnsureTicket(ctx, t)
}

func (h faulty) Append(ctx context.Context, ref adapters.Ref, msgs []adapters.Message) ([]adapters.Appended, error) {
	if err := h.f.fail(); err != nil {
		return nil, err
	}
	return h.Helpdesk.Append(ctx, ref, msgs)
}

func (h faulty) SetStatus(ctx context.Context, ref adapters.Ref, s guestapi.Status) error {
	if err := h.f.fail(); err != nil {
		return err
	}
	return h.Helpdesk.SetStatus(ctx, ref, s)
}

func (h faulty) Changes(ctx context.Context, c adapters.Cursor) ([]adapters.Event, adapters.Cursor, error) {
	if err := h.f.fail(); err != nil {
		return nil, c, err
	}
	return h.Helpdesk.Changes(ctx, c)
}

func (h faulty) Lookup(ctx context.Context, upstreamID string) (adapters.Found, bool, error) {
	if err := h.f.fail(); err != nil {
		return adapters.Found{}, false, err
	}
	return h.Helpdesk.Lookup(ctx, upstreamID)
}

func (h faulty) Connect(ctx context.Context, ref adapters.Ref, t adapters.Ticket) error {
	if err := h.f.fail(); err != nil {
		return err
	}
	return h.Helpdesk.(adapters.Connector).Connect(ctx, ref, t)
}

// Connect, with the flaw connect-writes, leaves a note of its own.
func (h broken) Connect(ctx context.Context, ref adapters.Ref, t adapters.Ticket) error {
	if err := h.Helpdesk.(adapters.Connector).Connect(ctx, ref, t); err != nil || h.flaw != "connect-writes" {
		return err
	}
	_, err := h.Helpdesk.Append(ctx, ref, []adapters.Message{{UpstreamID: "connected-" + t.UpstreamID, AuthorName: "bridge", Body: "Connected."}})
	return err
}

func (h faulty) MarkSent(ctx context.Context, ref adapters.Ref, eventID, upstreamMessageID string) error {
	if err := h.f.fail(); err != nil {
		return err
	}
	return h.Helpdesk.MarkSent(ctx, ref, eventID, upstreamMessageID)
}

// flawErr applies the error flaws to err.
func (h broken) flawErr(err error) error {
	if err == nil {
		return nil
	}
	switch {
	case h.flaw == "auth-as-temporary" && errors.Is(err, adapters.ErrAuth):
		return errors.New(strings.ReplaceAll(err.Error(), adapters.ErrAuth.Error(), "temporary failure"))
	case h.flaw == "outage-as-invalid" && errors.Is(err, errOutage):
		return fmt.Errorf("%w: %w", err, adapters.ErrInvalid)
	case h.flaw == "leaks-secret":
		return fmt.Errorf("%w (sent with token %s)", err, secret)
	}
	return err
}

func (h broken) Changes(ctx context.Context, c adapters.Cursor) ([]adapters.Event, adapters.Cursor, error) {
	evs, next, err := h.changes(ctx, c)
	return evs, next, h.flawErr(err)
}

func (h broken) Lookup(ctx context.Context, upstreamID string) (adapters.Found, bool, error) {
	f, ok, err := h.Helpdesk.Lookup(ctx, upstreamID)
	if h.flaw == "forgets-archived" && ok && h.faults.isArchived(f.Ref) {
		return adapters.Found{}, false, nil
	}
	return f, ok, h.flawErr(err)
}

func (h broken) EnsureTicket(ctx context.Context, t adapters.Ticket) (adapters.Ref, error) {
	ref, err := h.ensureTicket(ctx, t)
	return ref, h.flawErr(err)
}

func (h broken) ensureTicket(ctx context.Context, t adapters.Ticket) (adapters.Ref, error) {
	if h.flaw == "duplicates" {
		if _, ok, err := h.Lookup(ctx, t.UpstreamID); err == nil && ok {
			t.UpstreamID += "-again" // creates a second ticket instead of finding the first
		}
	}
	return h.Helpdesk.EnsureTicket(ctx, t)
}

func (h broken) Append(ctx context.Context, ref adapters.Ref, msgs []adapters.Message) ([]adapters.Appended, error) {
	msgs = append([]adapters.Message(nil), msgs...)
	switch h.flaw {
	case "ascii-only":
		for i := range msgs {
			msgs[i].Body = strings.Map(func(r rune) rune {
				if r > 127 {
					return '?'
				}
				return r
			}, msgs[i].Body)
		}
	case "skips-bad":
		var keep []adapters.Message
		for _, m := range msgs {
			if strings.TrimSpace(m.Body) != "" && m.UpstreamID != "" {
				keep = append(keep, m)
			}
		}
		msgs = keep
	case "all-public":
		for i := range msgs {
			msgs[i].Public = true
		}
	case "no-author":
		for i := range msgs {
			msgs[i].AuthorName = "someone"
		}
	}
	out, err := h.Helpdesk.Append(ctx, ref, msgs)
	if h.flaw == "drops-on-429" && errors.Is(err, errRateLimited) {
		out = nil
		for _, m := range msgs {
			out = append(out, adapters.Appended{UpstreamID: m.UpstreamID, HelpdeskID: "dropped"})
		}
		return out, nil
	}
	err = h.flawErr(err)
	if h.flaw == "forgets-existing" {
		for i := range out {
			out[i].Existed = false
		}
	}
	return out, err
}

func (h broken) SetStatus(ctx context.Context, ref adapters.Ref, s guestapi.Status) error {
	if h.flaw == "echoes" {
		h.mu.Lock()
		*h.own = append(*h.own, adapters.Event{ID: fmt.Sprint("own-", len(*h.own)), Ref: ref, Kind: adapters.EventStatus, Status: s})
		h.mu.Unlock()
	}
	return h.flawErr(h.Helpdesk.SetStatus(ctx, ref, s))
}

func (h broken) changes(ctx context.Context, c adapters.Cursor) ([]adapters.Event, adapters.Cursor, error) {
	evs, next, err := h.Helpdesk.Changes(ctx, c)
	switch h.flaw {
	case "echoes":
		h.mu.Lock()
		evs = append(evs, *h.own...)
		*h.own = nil
		h.mu.Unlock()
	case "repeats":
		next = c // forgets to move: a second call from the returned cursor repeats
		if len(evs) > 0 {
			next = "0"
		}
	}
	return evs, next, err
}

func harness(flaw string) adaptertest.Harness {
	b := memory.NewBackend()
	var mu sync.Mutex
	var own []adapters.Event
	faults := &faultState{archived: map[adapters.Ref]bool{}}
	return adaptertest.Harness{
		New: func(testing.TB) adapters.Helpdesk {
			inner := faulty{Helpdesk: memory.New(b, memory.Options{}), f: faults}
			if flaw == "" {
				return inner
			}
			return broken{Helpdesk: inner, flaw: flaw, faults: faults, mu: &mu, own: &own}
		},
		Agent:   agent{b},
		Status:  memory.DefaultStatusMap(),
		Caps:    adaptertest.Caps{MarkSent: true, AuthorName: true, Events: true},
		Faults:  faults,
		Secrets: []string{secret},
		Archive: func(t testing.TB, ref adapters.Ref) {
			faults.mu.Lock()
			faults.archived[ref] = true
			faults.mu.Unlock()
		},
	}
}

// TestBrokenHelper runs the suite against the flaw named in the
// environment; it is run by TestSuiteCatchesFlaws in a child process.
func TestBrokenHelper(t *testing.T) {
	flaw := os.Getenv("ADAPTERTEST_FLAW")
	if flaw == "" {
		t.Skip("run by TestSuiteCatchesFlaws")
	}
	adaptertest.Run(t, harness(flaw))
}

func TestSound(t *testing.T) {
	adaptertest.Run(t, harness(""))
}

// TestSuiteCatchesFlaws shows that every case can fail: each flawed
// adapter fails the case meant to catch it.
func TestSuiteCatchesFlaws(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the test binary once per flaw")
	}
	for flaw, tc := range flaws {
		t.Run(flaw, func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestBrokenHelper$", "-test.v")
			cmd.Env = append(os.Environ(), "ADAPTERTEST_FLAW="+flaw)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite passed an adapter that %s:\n%s", flaw, out)
			}
			if want := "--- FAIL: TestBrokenHelper/" + tc + " "; !strings.Contains(string(out), want) {
				t.Fatalf("case %s did not catch the adapter that %s:\n%s", tc, flaw, out)
			}
		})
	}
}
