package bridge

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/sync"
)

// TestCycleKeepsWhoWroteEachMessage: a message mirrored by a cycle is
// stored with its author, its time and its first words, which the
// request's detail carries.
func TestCycleKeepsWhoWroteEachMessage(t *testing.T) {
	ctx := t.Context()
	env, cfg, sc, ts := hotelOn(t)
	tv, err := ts.Server.CreateTicket(ts.Org, refserver.NewTicket{Department: "housekeeping", TaskDescription: "Pillows"})
	if err != nil {
		t.Fatal(err)
	}
	body := "Could we have\n\ntwo more pillows in 512? " + strings.Repeat("Thank you so much. ", 8)
	if _, err := ts.Server.AddMessage(tv.ID, refserver.ConsoleMessage{AuthorType: guestapi.AuthorGuest, AuthorName: "Mrs Example", Body: body}); err != nil {
		t.Fatal(err)
	}
	b, err := New(ctx, env, cfg, sc, slog.New(slog.DiscardHandler), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.Engine().RunCycle(ctx); err != nil {
		t.Fatal(err)
	}
	d, err := sync.ReadTicketByID(ctx, b.Store(), tv.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.MirroredMessages) != 1 || len(d.Messages) != 1 {
		t.Fatalf("mirrored %v, with info %v", d.MirroredMessages, d.Messages)
	}
	for id, m := range d.Messages {
		if m.AuthorType != "guest" || m.AuthorName != "Mrs Example" || m.WrittenAt.IsZero() || !strings.HasPrefix(m.FirstWords, "Could we have two more pillows in 512? Thank you") || !strings.HasSuffix(m.FirstWords, "…") {
			t.Errorf("message %s is kept as %+v", id, m)
		}
	}
}
