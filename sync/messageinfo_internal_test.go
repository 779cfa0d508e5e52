package sync

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/state"
)

func TestFirstWords(t *testing.T) {
	long := strings.Repeat("towels ", 20) // 140 characters
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"  Two towels,\n\nplease.\r\n ", "Two towels, please."},
		{long, strings.TrimSpace(strings.Repeat("towels ", 11)) + "…"},
		{strings.Repeat("é", 100), strings.Repeat("é", 80) + "…"},
	} {
		got := firstWords(c.in)
		if got != c.want {
			t.Errorf("firstWords(%q) = %q, want %q", c.in, got, c.want)
		}
		if utf8.RuneCountInString(got) > firstWordsMax+1 {
			t.Errorf("firstWords(%q) is %d characters", c.in, utf8.RuneCountInString(got))
		}
	}
}

func TestOwnInfo(t *testing.T) {
	sent := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	en := state.Entry{Kind: state.KindReply, SentAt: sent, Payload: state.Payload{Body: "On their\nway.", AuthorName: "Ana"}}
	if got := ownInfo(en); got != (state.MessageInfo{AuthorType: "staff", AuthorName: "Ana", WrittenAt: sent, FirstWords: "On their way."}) {
		t.Errorf("ownInfo of a reply = %+v", got)
	}
	en.Kind, en.Payload = state.KindStatus, state.Payload{Status: "done"}
	if got := ownInfo(en); got != (state.MessageInfo{}) {
		t.Errorf("ownInfo of a status change = %+v", got)
	}
}

// TestNoteWriters: the guest's messages the helpdesk took move the
// ticket's GuestWroteAt, staff messages visible to the guest its
// AnsweredAt; a note, and a message the helpdesk did not take, neither.
// A guest writing after the answer makes the request unanswered again.
func TestNoteWriters(t *testing.T) {
	at := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	var tk state.Ticket
	if !tk.Unanswered() {
		t.Fatal("a new request is answered")
	}
	msgs := []adapters.Message{
		{UpstreamID: "m1", AuthorType: guestapi.AuthorGuest, Public: true, CreatedAt: at},
		{UpstreamID: "m2", AuthorType: guestapi.AuthorStaff, Public: false, CreatedAt: at.Add(time.Minute)},
		{UpstreamID: "m3", AuthorType: guestapi.AuthorStaff, Public: true, CreatedAt: at.Add(2 * time.Minute)},
		{UpstreamID: "m4", AuthorType: guestapi.AuthorGuest, Public: true, CreatedAt: at.Add(3 * time.Minute)},
	}
	noteWriters(&tk, msgs, []adapters.Appended{{UpstreamID: "m1"}, {UpstreamID: "m2"}, {UpstreamID: "m3", Existed: true}})
	if !tk.GuestWroteAt.Equal(at) || !tk.AnsweredAt.Equal(at.Add(2*time.Minute)) || tk.Unanswered() {
		t.Fatalf("guest wrote %v, answered %v, unanswered %t; want %v, %v, false", tk.GuestWroteAt, tk.AnsweredAt, tk.Unanswered(), at, at.Add(2*time.Minute))
	}
	noteWriters(&tk, msgs[3:], []adapters.Appended{{UpstreamID: "m4"}})
	if !tk.Unanswered() {
		t.Fatal("the guest wrote after the answer and the request is answered")
	}
}
