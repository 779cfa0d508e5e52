package adaptertest_test

import (
	"context"
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
	flaw string

	mu  *sync.Mutex
	own *[]adapters.Event // own writes, for the echo flaw
}

var flaws = map[string]string{
	"forgets-existing": "AppendIdempotent",
	"duplicates":       "EnsureTicketIdempotent",
	"echoes":           "OwnWritesFiltered",
	"ascii-only":       "TextPreserved",
	"skips-bad":        "BadInput",
	"all-public":       "PublicAndInternal",
	"no-author":        "AuthorTypeAndTimeVisible",
	"repeats":          "ChangesCursor",
}

func (h broken) EnsureTicket(ctx context.Context, t adapters.Ticket) (adapters.Ref, error) {
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
	return h.Helpdesk.SetStatus(ctx, ref, s)
}

func (h broken) Changes(ctx context.Context, c adapters.Cursor) ([]adapters.Event, adapters.Cursor, error) {
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
	return adaptertest.Harness{
		New: func(testing.TB) adapters.Helpdesk {
			inner := memory.New(b, memory.Options{})
			if flaw == "" {
				return inner
			}
			return broken{Helpdesk: inner, flaw: flaw, mu: &mu, own: &own}
		},
		Agent:  agent{b},
		Status: memory.DefaultStatusMap(),
		Caps:   adaptertest.Caps{MarkSent: true, AuthorName: true},
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
