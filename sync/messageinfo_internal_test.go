package sync

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

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
