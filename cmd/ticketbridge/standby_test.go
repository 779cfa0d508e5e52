package main

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/state/statetest"
)

// TestSingleHotelStandsBy: two daemons of one hotel on one database; the
// second stands by while the first syncs, takes over as soon as the first
// stops, and syncs what the first left.
func TestSingleHotelStandsBy(t *testing.T) {
	db := statetest.PostgresURL(t) // before newBridge clears the environment
	b := newBridge(t)
	b.vars["TICKETBRIDGE_STATE"] = db
	b.vars["TICKETBRIDGE_LOG_LEVEL"] = "info"
	b.vars["TICKETBRIDGE_SCHEDULE"] = "@every 1000h" // the first cycle only
	env := b.envFile()
	a := b.ticket("towels")

	type daemon struct {
		logs   *lineWatch
		cancel context.CancelFunc
		done   chan struct{} // closed when run returned, err set
		err    error
	}
	start := func() *daemon {
		d := &daemon{logs: &lineWatch{want: "", lines: make(chan string, 1024)}, done: make(chan struct{})}
		var ctx context.Context
		ctx, d.cancel = context.WithCancel(context.Background())
		go func() { d.err = run(ctx, []string{"run", "--env-file", env}, io.Discard, d.logs); close(d.done) }()
		t.Cleanup(func() { d.cancel(); <-d.done })
		return d
	}
	waitLine := func(who string, d *daemon, want string) {
		t.Helper()
		for {
			select {
			case line := <-d.logs.lines:
				if strings.Contains(line, want) {
					return
				}
			case <-d.done:
				t.Fatalf("%s ended before %q: %v", who, want, d.err)
			case <-time.After(time.Minute): // a hang's report, not a timing
				t.Fatalf("%s wrote no %q within a minute", who, want)
			}
		}
	}
	da := start()
	waitLine("a", da, "cycle ok")
	if n := countFolders(b.vars["TICKETBRIDGE_FILES_DIR"], a); n != 1 {
		t.Fatalf("after a's first cycle: %d folders of the request, want 1", n)
	}
	db2 := start()
	waitLine("b", db2, "standing by")
	guestWrites(t, b.ts, a, "and a bathrobe")
	b2 := b.ticket("a lamp")
	da.cancel()
	if <-da.done; da.err != nil {
		t.Fatalf("a stopped with %v", da.err)
	}
	waitLine("b", db2, "holds the lease")
	waitLine("b", db2, "cycle ok")
	if n := countFolders(b.vars["TICKETBRIDGE_FILES_DIR"], b2); n != 1 {
		t.Errorf("b did not sync the request made while it stood by: %d folders", n)
	}
	if n := countFolders(b.vars["TICKETBRIDGE_FILES_DIR"], a); n != 1 {
		t.Errorf("after b's cycle: %d folders of the first request, want 1", n)
	}
	tj := readTicketJSON(t, filepath.Join(b.vars["TICKETBRIDGE_FILES_DIR"], "tickets", folderOf(b.vars["TICKETBRIDGE_FILES_DIR"], a), "ticket.json"))
	n := 0
	for _, m := range tj.Thread {
		if strings.Contains(m.Body, "and a bathrobe") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the guest message written while b stood by is in the folder %d times, want once", n)
	}
}

// A daemon of many hotels runs the collector at half the default target
// unless the environment chooses.
func TestFleetGC(t *testing.T) {
	for _, c := range []struct {
		gogc, limit string
		want        int
		ok          bool
	}{
		{"", "", fleetGCPercent, true},
		{"100", "", 0, false},
		{"", "512MiB", 0, false},
	} {
		t.Setenv("GOGC", c.gogc)
		t.Setenv("GOMEMLIMIT", c.limit)
		if got, ok := fleetGC(); got != c.want || ok != c.ok {
			t.Errorf("GOGC=%q GOMEMLIMIT=%q: fleetGC = %d, %t; want %d, %t", c.gogc, c.limit, got, ok, c.want, c.ok)
		}
	}
}
