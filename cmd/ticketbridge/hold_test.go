package main

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	gosync "sync"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/internal/lease"
	"github.com/ticketbridge/ticketbridge/state"
	"github.com/ticketbridge/ticketbridge/state/statetest"
)

// otherReplica joins the database at db as a replica of another host.
func otherReplica(t *testing.T, db, id string) *state.Leases {
	t.Helper()
	l, err := state.OpenLeases(context.Background(), db, id, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// TestOnceBesideTheLeaseHolder: on PostgreSQL, once, retry, skip, pause
// and resync refuse to act for a hotel whose lease another replica holds,
// name that replica, and write nothing; once the lease is free, once
// syncs.
func TestOnceBesideTheLeaseHolder(t *testing.T) {
	db := statetest.PostgresURL(t) // before newBridge clears the environment
	b := newBridge(t)
	b.vars["TICKETBRIDGE_STATE"] = db
	a := b.ticket("towels")
	web1 := otherReplica(t, db, "web1-0a1b2c3d")
	lease, ok, err := web1.Acquire(context.Background(), state.DefaultHotel)
	if err != nil || !ok {
		t.Fatalf("the other replica takes the lease: %t, %v", ok, err)
	}

	out, errOut, code := b.cmd("once")
	if code != 1 {
		t.Fatalf("once beside the holder: exit %d, want 1\n%s\n%s", code, out, errOut)
	}
	mustContain(t, "once's refusal", errOut, "replica web1-0a1b2c3d (host web1)", "stop that daemon (on web1)", "TICKETBRIDGE_LEASE_TTL")
	if n := countFolders(b.vars["TICKETBRIDGE_FILES_DIR"], a); n != 0 {
		t.Errorf("once beside the holder made %d helpdesk tickets, want none", n)
	}
	if n := b.posts(); n != 0 {
		t.Errorf("once beside the holder made %d POSTs upstream, want none", n)
	}
	for _, args := range [][]string{{"retry", a}, {"skip", a, "--reason", "test"}, {"pause", a}, {"resync", a}} {
		out, errOut, code := b.cmd(args[0], args[1:]...)
		if code != 1 {
			t.Errorf("%s beside the holder: exit %d, want 1\n%s\n%s", args[0], code, out, errOut)
		}
		mustContain(t, args[0]+"'s refusal", errOut, "replica web1-0a1b2c3d (host web1)", "run "+args[0]+" on web1", "TICKETBRIDGE_LEASE_TTL")
	}
	if h, _, _ := web1.Owner(context.Background(), state.DefaultHotel); h.Fence != lease.Fence || !h.Live {
		t.Errorf("after the refusals the lease is %+v, want the holder's, fence %d", h, lease.Fence)
	}

	if err := web1.Release(context.Background(), lease); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = b.cmd("once")
	if code != 0 {
		t.Fatalf("once with the lease free: exit %d\n%s\n%s", code, out, errOut)
	}
	mustContain(t, "once", out, "helpdesk tickets created 1")
}

// TestOnceTakesAndReleasesTheLease: on PostgreSQL, once, retry and the
// commands on a request take the hotel's lease (raising its fence) and
// give it back when done, so that another replica takes it at once.
func TestOnceTakesAndReleasesTheLease(t *testing.T) {
	db := statetest.PostgresURL(t) // before newBridge clears the environment
	b := newBridge(t)
	b.vars["TICKETBRIDGE_STATE"] = db
	a := b.ticket("towels")
	web1 := otherReplica(t, db, "web1-0a1b2c3d")

	fence := int64(0)
	for _, args := range [][]string{{"once"}, {"retry", a}, {"pause", a}, {"resume", a}, {"resync", a}} {
		out, errOut, code := b.cmd(args[0], args[1:]...)
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s\n%s", args[0], code, out, errOut)
		}
		h, ok, err := web1.Owner(context.Background(), state.DefaultHotel)
		switch {
		case err != nil:
			t.Fatal(err)
		case !ok || h.Fence <= fence:
			t.Errorf("after %s the hotel's lease is %+v (%t), want one taken since fence %d", args[0], h, ok, fence)
		case h.Live:
			t.Errorf("after %s the lease is still held by %s", args[0], h.Replica)
		}
		fence = h.Fence
	}
	if n := countFolders(b.vars["TICKETBRIDGE_FILES_DIR"], a); n != 1 {
		t.Errorf("once made %d helpdesk tickets, want 1", n)
	}
	if _, ok, err := web1.Acquire(context.Background(), state.DefaultHotel); err != nil || !ok {
		t.Errorf("another replica takes the lease right after: %t, %v; want it", ok, err)
	}
}

// TestOnceOfManyHotelsBesideTheLeaseHolder: with a hotels directory on
// PostgreSQL, once refuses the hotels another replica holds and syncs the
// others; retry --hotel refuses the same way.
func TestOnceOfManyHotelsBesideTheLeaseHolder(t *testing.T) {
	db := statetest.PostgresURL(t)
	fx := newFleetFixture(t)
	fx.MainVars["TICKETBRIDGE_STATE"] = db
	fx.WriteHotel("alpha", nil)
	fx.WriteHotel("beta", nil)
	web1 := otherReplica(t, db, "web1-0a1b2c3d")
	if _, ok, err := web1.Acquire(context.Background(), "alpha"); err != nil || !ok {
		t.Fatalf("the other replica takes alpha's lease: %t, %v", ok, err)
	}

	out, errOut, code := fx.cmd("once")
	if code != 1 {
		t.Fatalf("once: exit %d, want 1\n%s\n%s", code, out, errOut)
	}
	mustContain(t, "once", out, "hotel alpha: once: hotel alpha is synced by replica web1-0a1b2c3d (host web1)", "== hotel beta ==\ncycle ok")
	mustContain(t, "once", errOut, "1 of 2 hotels failed: alpha")
	if h, _, _ := web1.Owner(context.Background(), "beta"); h.Replica == "" || h.Live {
		t.Errorf("beta's lease after once: %+v, want taken and released", h)
	}
	out, errOut, code = fx.cmd("retry", "--hotel", "alpha", "some-event")
	if code != 1 {
		t.Fatalf("retry --hotel alpha: exit %d, want 1\n%s\n%s", code, out, errOut)
	}
	mustContain(t, "retry", errOut, "hotel alpha is synced by replica web1-0a1b2c3d")
}

// TestHoldRefusedKeepsTheContext: when holdHotel does not get the lease
// (a replica holds it, or taking it failed), it returns the caller's
// context as it was, not one it ended: retry and skip ask a daemon of
// this host with it.
func TestHoldRefusedKeepsTheContext(t *testing.T) {
	here := state.Owner{Replica: lease.NewReplicaID(), Live: true}
	for name, take := range map[string]takeFunc{
		"held here": func(context.Context, func()) (*lease.Single, state.Owner, error) { return nil, here, nil },
		"failed": func(context.Context, func()) (*lease.Single, state.Owner, error) {
			return nil, state.Owner{}, errors.New("database out of reach")
		},
	} {
		ctx := t.Context()
		got, h, err := holdWith(ctx, "retry", state.DefaultHotel, take)
		switch {
		case err == nil || h != nil:
			t.Errorf("%s: hold %v, error %v; want no hold and an error", name, h, err)
		case got.Err() != nil:
			t.Errorf("%s: the context returned has ended: %v", name, context.Cause(got))
		case got != ctx:
			t.Errorf("%s: the context returned is not the caller's", name)
		}
	}
}

// TestRetryBesideTheLeaseHolderOnThisHost: on PostgreSQL, retry and skip
// beside a daemon of this host holding the hotel's lease ask that daemon
// through its console, with the console token, and print its answer.
func TestRetryBesideTheLeaseHolderOnThisHost(t *testing.T) {
	db := statetest.PostgresURL(t) // before newBridge clears the environment
	b := newBridge(t)
	b.vars["TICKETBRIDGE_STATE"] = db
	daemon := otherReplica(t, db, lease.NewReplicaID())
	if _, ok, err := daemon.Acquire(context.Background(), state.DefaultHotel); err != nil || !ok {
		t.Fatalf("the daemon of this host takes the lease: %t, %v", ok, err)
	}
	var (
		mu    gosync.Mutex
		asked []string
	)
	console := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+consoleToken {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		mu.Lock()
		asked = append(asked, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
		mu.Unlock()
		_, _ = w.Write([]byte("the daemon did " + strings.TrimPrefix(r.URL.Path, "/") + "\n"))
	}))
	defer console.Close()
	tokFile := filepath.Join(b.dir, "console-token")
	if err := os.WriteFile(tokFile, []byte(consoleToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b.vars["TICKETBRIDGE_LISTEN"] = strings.TrimPrefix(console.URL, "http://")
	b.vars["TICKETBRIDGE_CONSOLE_TOKEN_FILE"] = tokFile

	for _, args := range [][]string{{"retry", "ev-1"}, {"skip", "ev-2", "--reason", "told the guest"}} {
		out, errOut, code := b.cmd(args[0], args[1:]...)
		if code != 0 || !strings.Contains(out, "the daemon did "+args[0]) {
			t.Errorf("%s beside the daemon of this host: exit %d\n%s\n%s", args[0], code, out, errOut)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"POST /retry?id=ev-1", "POST /skip?id=ev-2"}; strings.Join(asked, ", ") != strings.Join(want, ", ") {
		t.Errorf("the daemon was asked %q, want %q", asked, want)
	}
}
