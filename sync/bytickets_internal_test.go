package sync

import (
	"slices"
	"testing"

	"github.com/ticketbridge/ticketbridge/state"
)

// TestByTicketKeepsOneTicketTogether: MarkSent of one ticket's entries runs
// in one group, in journal order, so the engine never works on a ticket
// from two goroutines at once.
func TestByTicketKeepsOneTicketTogether(t *testing.T) {
	entries := []state.Entry{
		{TicketID: "a", EventID: "1"},
		{TicketID: "b", EventID: "2"},
		{TicketID: "a", EventID: "3"},
		{TicketID: "c", EventID: "4"},
		{TicketID: "b", EventID: "5"},
		{TicketID: "a", EventID: "6"},
	}
	got := byTicket(entries)
	want := [][]int{{0, 2, 5}, {1, 4}, {3}}
	if !slices.EqualFunc(got, want, slices.Equal[[]int]) {
		t.Fatalf("byTicket = %v, want %v", got, want)
	}
	if len(byTicket(nil)) != 0 {
		t.Fatal("no entries, some groups")
	}
}
