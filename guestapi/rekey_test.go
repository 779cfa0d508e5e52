package guestapi_test

import (
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver/refservertest"
	"github.com/ticketbridge/ticketbridge/internal/testutil"
)

// TestRotatedKeyIsTakenOnA401: a key rotated in its file (Rekey) is taken
// when the API refuses the old one: the refused request is made once
// more with the new key, the token exchange too, and neither key shows in
// the log; a Rekey that fails or gives the same key leaves the 401.
func TestRotatedKeyIsTakenOnA401(t *testing.T) {
	ts := refservertest.New(t)
	old := ts.Keys.TicketsWrite
	var file atomic.Value // the key file's content
	file.Store(old)
	var asked atomic.Int32
	logs := &testutil.Buffer{}
	c, err := guestapi.New(guestapi.Config{BaseURL: ts.URL, APIKey: old, Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Rekey: func() (string, error) {
			asked.Add(1)
			if v := file.Load().(string); v != "" {
				return v, nil
			}
			return "", errors.New("read key file: permission denied")
		}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListTickets(t.Context(), guestapi.ListOptions{}); err != nil {
		t.Fatal(err)
	}

	// Rotation: the console issues a new key and revokes the old one.
	if err := ts.Server.RevokeKey(ts.Org, "tickets-write"); err != nil {
		t.Fatal(err)
	}
	// Not written to the file yet: the 401 stands, asked once.
	if _, err := c.ListTickets(t.Context(), guestapi.ListOptions{}); !errors.Is(err, guestapi.ErrUnauthorized) || asked.Load() != 1 {
		t.Fatalf("with the old key still in the file: %v, asked %d", err, asked.Load())
	}
	file.Store("")
	if _, err := c.ListTickets(t.Context(), guestapi.ListOptions{}); !errors.Is(err, guestapi.ErrUnauthorized) {
		t.Fatalf("with the file unreadable: %v", err)
	}
	k, err := ts.Server.IssueKey(ts.Org, refserver.KeySpec{Name: "rotated", Platform: refserver.PlatformRead, Tickets: refserver.TicketsWrite})
	if err != nil {
		t.Fatal(err)
	}
	file.Store(k.Value + "\n")
	if _, err := c.ListTickets(t.Context(), guestapi.ListOptions{}); err != nil {
		t.Fatalf("with the new key in the file: %v", err)
	}
	n := asked.Load()
	if _, err := c.Token(t.Context()); err != nil {
		t.Fatalf("the token exchange after the rotation: %v", err)
	}
	if _, err := c.ListTickets(t.Context(), guestapi.ListOptions{}); err != nil || asked.Load() != n {
		t.Fatalf("the new key is not kept: %v, asked %d more times", err, asked.Load()-n)
	}
	for _, key := range []string{old, k.Value} {
		if strings.Contains(logs.String(), key) {
			t.Fatalf("the log shows a key:\n%s", logs.String())
		}
	}
	if !strings.Contains(logs.String(), "using the new key") {
		t.Errorf("the switch to the new key is not logged:\n%s", logs.String())
	}
}
