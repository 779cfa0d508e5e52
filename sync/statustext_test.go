package sync_test

import (
	"strings"
	"testing"
	"time"

	tbsync "github.com/ticketbridge/ticketbridge/sync"
)

// TestStatusCountsNotSynced: `ticketbridge status` counts the requests
// deleted on the platform and the helpdesk tickets of another hotel, and
// says a deleted request is never read.
func TestStatusCountsNotSynced(t *testing.T) {
	at := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	s := &tbsync.Status{At: at, Counts: tbsync.StatusCounts{Tickets: 1, Deleted: 1, NotOurs: 2},
		Tickets: []tbsync.TicketStatus{{ID: "0b6c7e1d-0000-4000-8000-000000000001", Retired: true, Deleted: at, DueReason: tbsync.DueDeleted}}}
	var b strings.Builder
	if err := tbsync.WriteStatus(&b, "state.db", s); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"1 deleted on the platform, 2 helpdesk tickets of another hotel", "never (deleted on the platform)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("status output lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	if err := tbsync.WriteStatus(&b, "state.db", &tbsync.Status{At: at}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "Not synced") {
		t.Errorf("status says what is not synced when nothing is:\n%s", b.String())
	}
}

// TestStatusShowsPutOff: `ticketbridge status` says which side the last
// cycle put off, until when and why.
func TestStatusShowsPutOff(t *testing.T) {
	until := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	s := &tbsync.Status{LastCycle: &tbsync.Report{Outcome: tbsync.OutcomePutOff, Start: until.Add(-time.Hour),
		PutOff: []tbsync.PutOff{{Side: tbsync.SideHelpdesk, Until: until, Reason: "HTTP 503 (retry after 1h0m0s)"}}}}
	var b strings.Builder
	if err := tbsync.WriteStatus(&b, "state.db", s); err != nil {
		t.Fatal(err)
	}
	want := "no calls to the helpdesk before " + until.Local().Format(time.DateTime) + ": HTTP 503"
	if !strings.Contains(b.String(), want) {
		t.Errorf("status output lacks %q:\n%s", want, b.String())
	}
}

// TestStatusTicket: a snapshot's ticket is found as ReadTicket finds one
// in the state: by its whole id, its helpdesk reference, or 8 or more of
// its first characters matching one ticket only.
func TestStatusTicket(t *testing.T) {
	s := tbsync.Status{Tickets: []tbsync.TicketStatus{
		{ID: "0b6c7e1d-0000-4000-8000-000000000001", Ref: "hd-1"},
		{ID: "0b6c7e1d-0000-4000-8000-000000000002", Ref: "hd-2"},
	}}
	for id, want := range map[string]string{"0b6c7e1d-0000-4000-8000-000000000002": "hd-2", "hd-1": "hd-1",
		"0b6c7e1d-0000-4000-8000-0000000000": "2 tracked tickets start with", "0b6c7e1d-0000-4000-8000-000000000001x": "no tracked ticket",
		"0b6c7e1": "no tracked ticket"} {
		got, err := s.Ticket(id)
		if err != nil {
			got.Ref = err.Error()
		}
		if !strings.HasPrefix(got.Ref, want) {
			t.Errorf("Ticket(%q): %q, want %q", id, got.Ref, want)
		}
	}
}

// TestStatusTicketSaysCommands: `status ID` says that a request is
// paused, unlinked or waiting for a connect, as its page does.
func TestStatusTicketSaysCommands(t *testing.T) {
	at := time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		ts   tbsync.TicketStatus
		want string
	}{
		{tbsync.TicketStatus{ID: "a", Paused: at, PausedBy: "cli:mara"}, "Paused         by cli:mara since"},
		{tbsync.TicketStatus{ID: "a", Unlinked: at, UnlinkedBy: "cli:mara"}, "Unlinked       by cli:mara at"},
		{tbsync.TicketStatus{ID: "a", Connecting: "hd-9"}, "Connecting     to helpdesk ticket hd-9"},
	} {
		var out strings.Builder
		if err := tbsync.WriteTicket(&out, tbsync.TicketDetail{TicketStatus: c.ts}, false, at); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), c.want) {
			t.Errorf("status of %+v lacks %q:\n%s", c.ts, c.want, out.String())
		}
	}
}
