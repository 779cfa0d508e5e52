package sync_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/state"
	tbsync "github.com/ticketbridge/ticketbridge/sync"
)

// TestDryRunWritesNothing runs a dry run with work waiting on both sides
// and checks that it prints every write and makes none: the server, the
// helpdesk and the state file are as before; then a real cycle does what
// the plan said.
func TestDryRunWritesNothing(t *testing.T) {
	e := newEnv(t)
	old := e.newTicket("known ticket")
	e.cycle()
	ref := e.ref(old)
	e.clock.Advance(time.Minute)
	e.guest(old, "a new guest line")
	e.backend.Reply(ref, "Maria", "We are on it.")
	e.backend.SetStatus(ref, "Maria", "working")
	fresh := e.newTicket("brand new ticket")
	e.clock.Advance(time.Minute)
	e.store.Close()
	e.store = nil

	fileSum := func() [32]byte {
		b, err := os.ReadFile(e.path)
		if err != nil {
			t.Fatal(err)
		}
		return sha256.Sum256(b)
	}
	sum0, posts0, hd0 := fileSum(), e.posts(), e.backend.Tickets()
	up0 := e.ts.Server.Tickets(e.ts.Org)

	// The caller copies the state; the dry run records into the copy.
	scratch := filepath.Join(t.TempDir(), "state.db")
	if err := state.BackupFile(context.Background(), e.path, scratch); err != nil {
		t.Fatal(err)
	}
	st, err := state.Open(t.Context(), scratch, state.Options{Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var plan, logs bytes.Buffer
	rep, err := tbsync.DryRun(context.Background(), e.cfg, tbsync.Deps{
		API: e.client(e.key), Helpdesk: e.hd, Store: st, Now: e.clock.Now,
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	}, &plan)
	if err != nil {
		t.Fatalf("dry run: %v\n%s", err, plan.String())
	}
	if !rep.DryRun || rep.Created != 1 || rep.Sent != 2 {
		t.Fatalf("dry run report: %s", rep)
	}
	out := plan.String()
	for _, want := range []string{
		"would create a helpdesk ticket for " + fresh,
		`"first message of brand new ticket"`,
		"would append to helpdesk ticket " + string(ref) + `: public message of Guest (guest): "a new guest line"`,
		"would post a reply the guest sees to ticket " + old + ` as "Maria": "We are on it."`,
		"would set the status of ticket " + old + " to in_progress",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("plan lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(logs.String(), `msg="would create helpdesk ticket"`) || strings.Contains(logs.String(), `msg="created `) {
		t.Errorf("the log does not say what would be created:\n%s", logs.String())
	}
	if fileSum() != sum0 {
		t.Error("the dry run changed the state file")
	}
	if e.posts() != posts0 {
		t.Error("the dry run posted upstream")
	}
	if !reflect.DeepEqual(hd0, e.backend.Tickets()) {
		t.Error("the dry run changed the helpdesk")
	}
	if !reflect.DeepEqual(up0, e.ts.Server.Tickets(e.ts.Org)) {
		t.Error("the dry run changed an upstream ticket")
	}

	// The real cycle does it.
	e.open()
	r := e.cycle()
	if r.Created != 1 || r.Sent != 2 {
		t.Fatalf("real cycle: %s", r)
	}
	if got := e.upstream(old).Ticket.Status; got != guestapi.StatusInProgress {
		t.Fatalf("status %s after the real cycle", got)
	}
}
