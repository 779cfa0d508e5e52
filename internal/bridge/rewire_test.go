package bridge

import (
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/sync"
)

// TestRewireTakesAChangedKeyFile: Rewire with no secret file changed
// leaves the wiring as it is; with a new key in the key file it makes a
// new API client and a new adapter and engine, on the same state.
func TestRewireTakesAChangedKeyFile(t *testing.T) {
	ctx := t.Context()
	env, cfg, sc := hotel(t)
	b, err := New(ctx, env, cfg, sc, slog.New(slog.DiscardHandler), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	api, hd, eng, st := b.API(), b.Helpdesk(), b.Engine(), b.Store()
	if changed, err := b.Rewire(ctx); err != nil || changed != nil {
		t.Fatalf("Rewire with nothing changed: %v, %v", changed, err)
	}
	if b.API() != api || b.Helpdesk() != hd || b.Engine() != eng {
		t.Fatal("Rewire with nothing changed rewired")
	}
	keyFile, _ := env.Lookup("TICKETBRIDGE_API_KEY_FILE")
	if err := os.WriteFile(keyFile, []byte("rta_rotated0000000000000000000000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	changed, err := b.Rewire(ctx)
	if err != nil || !slices.Equal(changed, []string{"TICKETBRIDGE_API_KEY_FILE"}) {
		t.Fatalf("Rewire after the key file changed: %v, %v", changed, err)
	}
	if b.API() == api || b.Helpdesk() == hd || b.Engine() == eng || b.Store() != st {
		t.Error("Rewire did not make a new client, adapter and engine on the same state")
	}
	if changed, err := b.Rewire(ctx); err != nil || changed != nil {
		t.Fatalf("a second Rewire: %v, %v", changed, err)
	}
}

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
