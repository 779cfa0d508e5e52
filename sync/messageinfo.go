package sync

import (
	"strings"
	"unicode/utf8"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/state"
)

// firstWordsMax is about how many characters of a message the state keeps
// for staff (state.MessageInfo.FirstWords).
const firstWordsMax = 80

// messageInfo is what the state keeps for staff of message m, mirrored.
func messageInfo(m adapters.Message) state.MessageInfo {
	return state.MessageInfo{AuthorType: string(m.AuthorType), AuthorName: m.AuthorName, WrittenAt: m.CreatedAt, FirstWords: firstWords(m.Body)}
}

// ownInfo is what the state keeps for staff of the bridge's own post of
// entry en, sent: a staff message (the API's author_type of what a key
// posts), named as the entry names it, written when it was confirmed.
func ownInfo(en state.Entry) state.MessageInfo {
	if en.Kind == state.KindStatus {
		return state.MessageInfo{}
	}
	return state.MessageInfo{AuthorType: string(guestapi.AuthorStaff), AuthorName: en.Payload.AuthorName, WrittenAt: en.SentAt, FirstWords: firstWords(en.Payload.Body)}
}

// firstWords returns the start of text, its line breaks and runs of white
// space made one space: the whole of it when it is at most firstWordsMax
// characters, else its words that fit followed by "…" (a first word longer
// than that is cut).
func firstWords(text string) string {
	s := strings.Join(strings.Fields(text), " ")
	if utf8.RuneCountInString(s) <= firstWordsMax {
		return s
	}
	cut := 0 // the byte offset after the last whole word that fits
	n := 0
	for i, r := range s {
		if r == ' ' {
			cut = i
		}
		if n == firstWordsMax {
			break
		}
		n++
	}
	if cut == 0 {
		// One long word: cut it at firstWordsMax characters.
		i := 0
		for range firstWordsMax {
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
		}
		cut = i
	}
	return s[:cut] + "…"
}

// noteWriters moves t's GuestWroteAt and AnsweredAt (the deadline
// warnings' "unanswered") to the newest guest message, and staff message
// visible to the guest, of msgs that app says the helpdesk now holds.
func noteWriters(t *state.Ticket, msgs []adapters.Message, app []adapters.Appended) {
	held := make(map[string]bool, len(app))
	for _, a := range app {
		held[a.UpstreamID] = true
	}
	for _, m := range msgs {
		switch {
		case !held[m.UpstreamID]:
		case m.AuthorType == guestapi.AuthorGuest:
			t.NoteGuestWrote(m.CreatedAt)
		case m.AuthorType == guestapi.AuthorStaff && m.Public:
			t.NoteAnswered(m.CreatedAt)
		}
	}
}
