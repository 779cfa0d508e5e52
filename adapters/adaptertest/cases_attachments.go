package adaptertest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ticketbridge/ticketbridge/adapters"
)

// Attacher is implemented by an [Agent] whose helpdesk takes files on a
// reply or note; the case AttachmentsNoted needs it.
type Attacher interface {
	// Attach adds a public reply (public) or an internal note by author
	// to the ticket with the files attached, by name (their content is
	// the Agent's choice). body may be "": the agent sent the files alone.
	Attach(ctx context.Context, ref adapters.Ref, author, body string, public bool, files []string) error
}

// unsentPhrase starts the note of files not sent (adapters.UnsentNote).
const unsentPhrase = "Not sent"

// testAttachments checks that files the API cannot carry are never
// dropped in silence: the text of a reply with files goes upstream, a
// reply that is only files sends nothing, each leaves the ticket one
// internal note naming its files, and reading the same events again (a
// crash before the cursor was stored, a fresh instance) writes no second
// note.
func (s *suite) testAttachments(t *testing.T) {
	at, ok := s.h.Agent.(Attacher)
	if !ok {
		t.Skip("the agent cannot attach files")
	}
	tk := s.ticket("Directions to the spa")
	a, ref := s.ensure(t, tk)
	refs := []adapters.Ref{ref}
	c0 := s.drain(t, a, s.head)
	const author = "Anna (front desk)"
	text := fmt.Sprintf("Here is the map of the spa. [run %s attach]", s.run)
	withText := []string{"spa-map-" + s.run + ".png", "price-list-" + s.run + ".pdf"}
	alone := []string{"photo-" + s.run + ".jpg"}
	noted := []string{"floor-plan-" + s.run + ".pdf"}
	noteText := fmt.Sprintf("Plan for housekeeping attached. [run %s attach]", s.run)

	agentDo(t, "attach files to a reply", at.Attach(s.ctx, ref, author, text, true, withText))
	agentDo(t, "send files alone", at.Attach(s.ctx, ref, author, "", true, alone))
	agentDo(t, "attach files to a note", at.Attach(s.ctx, ref, author, noteText, false, noted))

	first, c1 := s.collect(t, a, c0, refs)
	if len(first) != 2 {
		t.Fatalf("Changes after a reply with files, files alone and a note with files returned %d events on the ticket, want 2 (the texts): %+v", len(first), first)
	}
	checkAgentEvent(t, s.h.Caps, first[0], adapters.EventReply, author, text)
	checkAgentEvent(t, s.h.Caps, first[1], adapters.EventNote, author, noteText)
	for _, ev := range first {
		checkEvent(t, ev, ref, tk.UpstreamID)
	}
	s.checkUnsentNotes(t, ref, withText, alone, noted)
	// Lookup lists the texts as Changes does, and the files alone not.
	s.checkLookupEvents(t, tk.UpstreamID, first)

	// The same events read again, by this instance from the old cursor
	// (the engine crashed before it stored c1) and by a fresh one from
	// the beginning: the same texts, no second note.
	again, _ := s.collect(t, a, c0, refs)
	if !slices.Equal(ids(again), ids(first)) {
		t.Errorf("the same cursor twice gave %v, then %v", ids(first), ids(again))
	}
	fresh, _ := s.collect(t, s.open(t), "", refs)
	if !slices.Equal(ids(fresh), ids(first)) {
		t.Errorf("a fresh instance from the empty cursor gave %v, want %v", ids(fresh), ids(first))
	}
	s.checkUnsentNotes(t, ref, withText, alone, noted)
	if evs, _ := s.collect(t, a, c1, refs); len(evs) != 0 {
		t.Errorf("Changes after the notes reported %+v: the bridge's own notes must not come back", evs)
	}
}

// checkUnsentNotes checks that the ticket holds, for each list of files,
// exactly one internal note naming them all.
func (s *suite) checkUnsentNotes(t *testing.T, ref adapters.Ref, lists ...[]string) {
	t.Helper()
	snap := s.read(t, ref)
	for _, files := range lists {
		var notes []SnapshotMessage
		for _, m := range snap.Messages {
			if !strings.Contains(m.Text, unsentPhrase) {
				continue
			}
			all := true
			for _, f := range files {
				all = all && strings.Contains(m.Text, f)
			}
			if all {
				notes = append(notes, m)
			}
		}
		if len(notes) != 1 {
			t.Errorf("the ticket holds %d notes naming %v as not sent, want 1; it holds:\n%s", len(notes), files, dump(snap))
			continue
		}
		if notes[0].Public {
			t.Errorf("the note naming %v is public, want an internal note", files)
		}
	}
}
