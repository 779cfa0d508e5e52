package saas_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/saas"
	"github.com/ticketbridge/ticketbridge/guestapi"
)

// memVendor is a Vendor over one ticket in memory; the API user is 1.
type memVendor struct {
	comments []saas.Comment
	status   string
	failAt   int // the Comment call that fails, 0 for none
	calls    int
}

func (v *memVendor) Self(context.Context) (int64, error) { return 1, nil }
func (v *memVendor) Find(context.Context, string) (adapters.Ref, bool, error) {
	return "7", true, nil
}
func (v *memVendor) Create(context.Context, adapters.Ticket) (adapters.Ref, error) {
	return "", errors.New("unused")
}
func (v *memVendor) Thread(context.Context, string) (int, adapters.Ref, bool, error) {
	return 7, "7", true, nil
}
func (v *memVendor) Resolve(_ context.Context, ref adapters.Ref) (int, error) {
	return saasRef(ref)
}
func (v *memVendor) Comments(context.Context, int) ([]saas.Comment, error)    { return v.comments, nil }
func (v *memVendor) AuthorName(context.Context, saas.Comment) (string, error) { return "", nil }
func (v *memVendor) Comment(_ context.Context, th int, m adapters.Message) (int, string, error) {
	v.calls++
	if v.calls == v.failAt {
		return th, "", errors.New("write failed")
	}
	id := strconv.Itoa(len(v.comments) + 1)
	v.comments = append(v.comments, saas.Comment{ID: id, Author: 1, Text: saas.MessageText(m)})
	return th, id, nil
}
func (v *memVendor) Note(_ context.Context, _ int, _, text string) error {
	v.comments = append(v.comments, saas.Comment{ID: "s", Author: 1, Text: text})
	return nil
}
func (v *memVendor) Status(_ context.Context, _ int, s guestapi.Status) error {
	v.status = string(s)
	return nil
}
func (v *memVendor) Current(int) adapters.FoundStatus {
	return adapters.APIStatusMap().Current(v.status, time.Time{})
}
func (v *memVendor) Events(_ context.Context, cur adapters.Cursor, _ int64) ([]adapters.Event, map[string][]string, adapters.Cursor, error) {
	return nil, nil, cur, nil
}

func saasRef(ref adapters.Ref) (int, error) {
	id, err := saas.ParseRef("mem", ref)
	return int(id), err
}

func TestHelpdeskMarkers(t *testing.T) {
	ctx := t.Context()
	v := &memVendor{comments: []saas.Comment{
		{ID: "1", Author: 1, Text: saas.MessageText(adapters.Message{UpstreamID: "m1", Body: "a"})},
		{ID: "2", Author: 9, Text: saas.MessageText(adapters.Message{UpstreamID: "m2", Body: "quoted by an agent"})},
	}}
	h := saas.NewHelpdesk[int]("mem", v, nil, false, nil)
	f, ok, err := h.Lookup(ctx, "u1")
	if err != nil || !ok || f.Ref != "7" || f.Messages["m1"] != "1" || len(f.Messages) != 1 {
		t.Fatalf("Lookup = %+v, %v, %v; want m1 only (m2's marker is another user's)", f, ok, err)
	}
	got, err := h.Append(ctx, "7", []adapters.Message{{UpstreamID: "m1", Body: "a"}, {UpstreamID: "m2", Body: "b"}, {UpstreamID: "m3", Body: "c"}})
	if err != nil || len(got) != 3 || !got[0].Existed || got[1].Existed || got[2].Existed || v.calls != 2 {
		t.Fatalf("Append = %+v, %v after %d writes; want m1 held, m2 and m3 written", got, err, v.calls)
	}
	v.failAt = v.calls + 2
	got, err = h.Append(ctx, "7", []adapters.Message{{UpstreamID: "m4", Body: "d"}, {UpstreamID: "m5", Body: "e"}})
	if err == nil || len(got) != 1 || got[0].UpstreamID != "m4" {
		t.Errorf("failed second write: %+v, %v; want m4 reported with the error", got, err)
	}
	for range 2 {
		if err := h.MarkSent(ctx, "7", "e1", "m9"); err != nil {
			t.Fatal(err)
		}
	}
	if f, _, _ := h.Lookup(ctx, "u1"); f.Sent["e1"] != "m9" || len(v.comments) != 6 {
		t.Errorf("MarkSent twice: %d comments, Sent %v; want one note", len(v.comments), f.Sent)
	}
	if _, err := h.Append(ctx, "x", []adapters.Message{{UpstreamID: "m", Body: "b"}}); !errors.Is(err, adapters.ErrNotFound) {
		t.Errorf("a Ref that is no number: %v", err)
	}
	if err := h.SetStatus(ctx, "7", "bogus"); !errors.Is(err, adapters.ErrInvalid) || v.status != "" {
		t.Errorf("an unknown status: %v", err)
	}
	_ = h.Close()
	if _, _, err := h.Changes(ctx, ""); !errors.Is(err, saas.ErrClosed) {
		t.Errorf("Changes after Close: %v", err)
	}
}

func TestTarget(t *testing.T) {
	m := adapters.StatusMap{
		ToHelpdesk:   map[guestapi.Status]string{guestapi.StatusNew: "new", guestapi.StatusInProgress: "open", guestapi.StatusDone: "solved"},
		FromHelpdesk: map[string]guestapi.Status{"open": guestapi.StatusInProgress, "pending": guestapi.StatusInProgress, "solved": guestapi.StatusDone},
	}
	for _, tc := range []struct {
		cur  string
		s    guestapi.Status
		want string
		ok   bool
	}{
		{"pending", guestapi.StatusInProgress, "", false}, // the agent's finer status stays
		{"open", guestapi.StatusDone, "solved", true},
		{"open", guestapi.StatusNew, "", false}, // no way back to new
		{"solved", guestapi.StatusNew, "open", true},
		{"new", guestapi.StatusNew, "new", false},
	} {
		if got, ok := saas.Target(m, tc.cur, tc.s, "new", "open"); ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("Target(%s, %s) = %q, %v; want %q, %v", tc.cur, tc.s, got, ok, tc.want, tc.ok)
		}
	}
}

func TestRefsURLNames(t *testing.T) {
	if id, err := saas.ParseRef("x", saas.RefOf(42)); err != nil || id != 42 {
		t.Errorf("ParseRef(RefOf(42)) = %d, %v", id, err)
	}
	for _, bad := range []adapters.Ref{"", "0", "-3", "007", "12a"} {
		if _, err := saas.ParseRef("x", bad); !errors.Is(err, adapters.ErrNotFound) {
			t.Errorf("ParseRef(%q): %v, want ErrNotFound", bad, err)
		}
	}
	if u := saas.URL("https://h/api", "/t", "a b", "1&2"); u != "https://h/api/t?a+b=1%262" {
		t.Errorf("URL = %q", u)
	}
	var n saas.Names
	fetches := 0
	fetch := func(context.Context, int64) (string, error) { fetches++; return "Ana", nil }
	for range 2 {
		if name, err := n.Get(t.Context(), 5, fetch); err != nil || name != "Ana" {
			t.Fatalf("Get = %q, %v", name, err)
		}
	}
	if fetches != 1 {
		t.Errorf("%d fetches, want the name kept after the first", fetches)
	}
}

// eventsVendor is a memVendor whose Events reports evs with files.
type eventsVendor struct {
	*memVendor
	evs     []adapters.Event
	files   map[string][]string
	noteErr error
}

func (v *eventsVendor) Events(_ context.Context, cur adapters.Cursor, _ int64) ([]adapters.Event, map[string][]string, adapters.Cursor, error) {
	return v.evs, v.files, cur + "+", nil
}

func (v *eventsVendor) Note(ctx context.Context, th int, op, text string) error {
	if v.noteErr != nil {
		return v.noteErr
	}
	return v.memVendor.Note(ctx, th, op, text)
}

func TestChangesNoteUnsent(t *testing.T) {
	ctx := t.Context()
	v := &eventsVendor{memVendor: &memVendor{}, evs: []adapters.Event{
		{ID: "c1", Ref: "7", Kind: adapters.EventReply, Body: "Here is the map."},
		{ID: "c2", Ref: "7", Kind: adapters.EventReply},
		{ID: "c3", Ref: "7", Kind: adapters.EventNote, Body: "no files"},
	}, files: map[string][]string{"c1": {"map.png", "invoice.pdf"}, "c2": {"photo.jpg"}}}
	h := saas.NewHelpdesk[int]("mem", v, nil, false, nil)

	peek, _, err := h.PeekChanges(ctx, "x")
	if err != nil || len(peek) != 2 || len(v.comments) != 0 {
		t.Fatalf("PeekChanges = %+v, %v with %d notes; want c1 and c3 and no note", peek, err, len(v.comments))
	}
	v.noteErr = errors.New("helpdesk down")
	if _, next, err := h.Changes(ctx, "x"); err == nil || next != "x" {
		t.Fatalf("Changes with the note failing = %q, %v; want the error and the cursor unmoved", next, err)
	}
	v.noteErr = nil
	for range 2 { // the second read: the engine crashed before storing the cursor
		evs, next, err := h.Changes(ctx, "x")
		if err != nil || next != "x+" || len(evs) != 2 || evs[0].ID != "c1" || evs[0].Body != "Here is the map." || evs[1].ID != "c3" {
			t.Fatalf("Changes = %+v, %q, %v; want c1 with its text, then c3", evs, next, err)
		}
	}
	want := []string{
		"Not sent to the guest: map.png, invoice.pdf (the Guest Requests API carries text only).\n\n[ticketbridge unsent c1]",
		"Not sent to the guest: photo.jpg (the Guest Requests API carries text only).\n\n[ticketbridge unsent c2]",
	}
	if len(v.comments) != len(want) {
		t.Fatalf("notes %+v, want %q", v.comments, want)
	}
	for i, c := range v.comments {
		if c.Text != want[i] {
			t.Errorf("note %d = %q, want %q", i, c.Text, want[i])
		}
	}

	v.noteErr = fmt.Errorf("ticket gone: %w", adapters.ErrNotFound)
	v.evs[0].ID, v.files = "c4", map[string][]string{"c4": {"x.png"}}
	if evs, _, err := h.Changes(ctx, "x"); err != nil || len(evs) != 3 {
		t.Errorf("Changes with a ticket gone = %+v, %v; want the events, the note skipped", evs, err)
	}
}
