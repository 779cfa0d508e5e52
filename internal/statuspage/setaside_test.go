package statuspage

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/sync"
)

// TestOverviewListsStaffFilesSetAside: the files the helpdesk set aside
// are listed on the overview, to anyone who reaches it, by name, reason
// and time, also when the status is read on demand; and the section is
// gone once none is left.
func TestOverviewListsStaffFilesSetAside(t *testing.T) { atT0(t, testOverviewListsStaffFilesSetAside) }

func testOverviewListsStaffFilesSetAside(t *testing.T) {
	for _, onDemand := range []bool{false, true} {
		st := fixture(t, 3)
		h := NewHotel("", st)
		if onDemand {
			h.OnDemand()
		}
		s, err := New(Options{Hotels: only(h), One: true, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		get := func() string { return getOK(t, s, "/") }
		status, err := sync.ReadStatus(t.Context(), st, t0)
		if err != nil {
			t.Fatal(err)
		}
		status.Held = []adapters.HeldError{
			{Op: "outbox file reply.txt", Need: "ticket: no ticket folder has that name or upstream id; the closest: 2026-03-14-housekeeping-3f2a9c1b",
				File: "outbox/failed/reply.txt", Since: t0.Add(-time.Hour)},
			{Ref: "42", Op: "set status done", Need: "the field Room number is required on solve"},
		}
		if err := h.CycleDone(sync.Report{Start: t0}, &status); err != nil {
			t.Fatal(err)
		}
		body := get()
		for _, want := range []string{"Staff files set aside (1)", "outbox/failed/reply.txt", "the closest: 2026-03-14-housekeeping-3f2a9c1b"} {
			if !strings.Contains(body, want) {
				t.Errorf("on demand %v: the overview lacks %q", onDemand, want)
			}
		}
		if strings.Contains(body, "Room number") {
			t.Errorf("on demand %v: a held status change is listed among the staff files", onDemand)
		}
		status.Held = nil
		if err := h.CycleDone(sync.Report{Start: t0.Add(time.Minute)}, &status); err != nil {
			t.Fatal(err)
		}
		if body := get(); strings.Contains(body, "Staff files set aside") {
			t.Errorf("on demand %v: the section stays once no file is set aside", onDemand)
		}
	}
}

// TestOverviewListsMailSetAside: the mails the email helpdesk set aside
// are listed apart from staff files, with the request a bounce names.
func TestOverviewListsMailSetAside(t *testing.T) { atT0(t, testOverviewListsMailSetAside) }

func testOverviewListsMailSetAside(t *testing.T) {
	st := fixture(t, 3)
	h := NewHotel("", st)
	s, err := New(Options{Hotels: only(h), One: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	status, err := sync.ReadStatus(t.Context(), st, t0)
	if err != nil {
		t.Fatal(err)
	}
	status.Held = []adapters.HeldError{
		{Op: `mail from mallory@elsewhere.example "Re: pillows"`, Need: "its sender is not on the allow-list",
			File: "TicketBridge Set aside/7", Since: t0.Add(-time.Hour), Mail: true},
		{Ref: "3f2a9c1b-0000-4000-8000-000000000001", Op: `mail from MAILER-DAEMON@hotel.example "Undelivered"`,
			Need: "a mail of the bridge came back undelivered (Status: 5.1.1)", File: "TicketBridge Set aside/8", Mail: true},
	}
	if err := h.CycleDone(sync.Report{Start: t0}, &status); err != nil {
		t.Fatal(err)
	}
	body := getOK(t, s, "/")
	for _, want := range []string{"Mail set aside (2)", "TicketBridge Set aside/7", "mallory@elsewhere.example", "Status: 5.1.1", "/tickets/3f2a9c1b-0000-4000-8000-000000000001"} {
		if !strings.Contains(body, want) {
			t.Errorf("the overview lacks %q", want)
		}
	}
	if strings.Contains(body, "Staff files set aside") {
		t.Error("mail set aside is listed among the staff files")
	}
}
