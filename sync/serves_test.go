package sync_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ticketbridge/ticketbridge/adapters/memory"
	"github.com/ticketbridge/ticketbridge/internal/redact"
	"github.com/ticketbridge/ticketbridge/state/statetest"
	tbsync "github.com/ticketbridge/ticketbridge/sync"
)

// backends runs fn on a state file and on PostgreSQL (skipped without
// the test database).
func backends(t *testing.T, fn func(t *testing.T, e *env)) {
	t.Run("bbolt", func(t *testing.T) { fn(t, newEnv(t)) })
	t.Run("postgres", func(t *testing.T) {
		e := newEnv(t)
		e.path = statetest.PostgresURL(t)
		fn(t, e)
	})
}

// servesAt sets what the engines made from now on are given as what the
// configuration serves: the reference server, e's key and a helpdesk at
// the folder at.
func (e *env) servesAt(at string) tbsync.Serves {
	s := tbsync.Serves{API: redact.Place(e.ts.URL), Key: tbsync.KeyFingerprint(e.key), Helpdesk: memory.Name + " " + at}
	e.serves = &s
	return s
}

// hdWrites counts the writes the helpdesk was asked for.
func (e *env) hdWrites() int {
	n := 0
	for _, op := range []memory.Op{memory.OpEnsureTicket, memory.OpAppend, memory.OpSetStatus, memory.OpMarkSent, memory.OpUpdate} {
		n += e.backend.Calls(op)
	}
	return n
}

// synced makes a hotel whose state knows one request, synced with the
// helpdesk at /srv/a, and leaves it with work for either side: a guest's
// message to mirror and an agent's reply to send.
func synced(t *testing.T, e *env) (id string) {
	t.Helper()
	e.servesAt("/srv/a")
	id = e.newTicket("Two towels to room 214")
	e.quiesce()
	e.guest(id, "and a pillow")
	if _, err := e.backend.Reply(e.ref(id), "Agent", "On its way"); err != nil {
		t.Fatal(err)
	}
	return id
}

// held runs a cycle that must be held, and checks that it wrote nothing
// on either side.
func held(t *testing.T, e *env) *tbsync.MovedError {
	t.Helper()
	e.open()
	posts, writes := e.posts(), e.hdWrites()
	rep, err := e.engine.RunCycle(t.Context())
	var moved *tbsync.MovedError
	if !errors.As(err, &moved) || !errors.Is(err, tbsync.ErrMoved) {
		t.Fatalf("cycle: %v, want a hold (%s)", err, rep)
	}
	if n := e.posts() - posts; n != 0 {
		t.Errorf("a held cycle wrote %d times upstream", n)
	}
	if n := e.hdWrites() - writes; n != 0 {
		t.Errorf("a held cycle wrote %d times to the helpdesk", n)
	}
	return moved
}

// runs runs a cycle that must carry the work synced left.
func runs(t *testing.T, e *env) {
	t.Helper()
	e.open()
	posts := e.posts()
	e.tick()
	if e.posts() == posts {
		t.Errorf("the agent's reply was not sent upstream")
	}
}

func recorded(t *testing.T, e *env) tbsync.Serves {
	t.Helper()
	s, ok, _, err := tbsync.ReadServes(t.Context(), e.store)
	if err != nil || !ok {
		t.Fatalf("read what the state serves: %v (recorded: %t)", err, ok)
	}
	return s
}

func TestServesFreshStateRecords(t *testing.T) {
	backends(t, func(t *testing.T, e *env) {
		want := e.servesAt("/srv/a")
		e.newTicket("Two towels to room 214")
		e.cycle()
		if got := recorded(t, e); got != want {
			t.Fatalf("recorded %+v, want %+v", got, want)
		}
		if strings.Contains(e.logs.String(), e.key) {
			t.Fatal("the log holds the API key")
		}
	})
}

// A state that records nothing yet, but knows requests (one an older
// ticketbridge wrote), records what it serves at its next start.
func TestServesOlderStateRecords(t *testing.T) {
	e := newEnv(t)
	e.newTicket("Two towels to room 214")
	e.quiesce()
	want := e.servesAt("/srv/b")
	e.open()
	e.tick()
	if got := recorded(t, e); got != want {
		t.Fatalf("recorded %+v, want %+v", got, want)
	}
}

func TestServesSameRuns(t *testing.T) {
	backends(t, func(t *testing.T, e *env) {
		synced(t, e)
		runs(t, e)
	})
}

func TestServesHelpdeskMovedIsHeldUntilConfirmed(t *testing.T) {
	backends(t, func(t *testing.T, e *env) {
		synced(t, e)
		now := e.servesAt("/srv/b")
		moved := held(t, e)
		if !moved.Moved.Helpdesk || moved.Moved.API || moved.Moved.Key {
			t.Fatalf("moved %+v, want the helpdesk", moved.Moved)
		}
		msg := moved.Error()
		for _, want := range []string{"helpdesk memory /srv/a → memory /srv/b", "ticketbridge confirm-move --helpdesk /srv/b"} {
			if !strings.Contains(msg, want) {
				t.Errorf("error %q does not say %q", msg, want)
			}
		}
		// A second start is held as well: nothing was recorded.
		held(t, e)
		// Naming what did not change, or another place, confirms nothing.
		for _, c := range []tbsync.Serves{{}, {API: now.API}, {Helpdesk: "/srv/c"}, {Helpdesk: "/srv/b", API: now.API}} {
			if _, err := tbsync.ConfirmMove(t.Context(), e.store, now, c); !errors.Is(err, tbsync.ErrConfirm) {
				t.Errorf("confirm %+v: %v, want ErrConfirm", c, err)
			}
		}
		held(t, e)
		// Named as status prints it, with the adapter's name, or without
		// (as cmd's test names it).
		done, err := tbsync.ConfirmMove(t.Context(), e.store, now, tbsync.Serves{Helpdesk: "memory /srv/b"})
		if err != nil || !done.Helpdesk || done.API || done.Key {
			t.Fatalf("confirm: %+v, %v", done, err)
		}
		runs(t, e)
		if got := recorded(t, e); got != now {
			t.Fatalf("recorded %+v, want %+v", got, now)
		}
	})
}

func TestServesAPIMovedIsHeldUntilConfirmed(t *testing.T) {
	backends(t, func(t *testing.T, e *env) {
		synced(t, e)
		now := e.servesAt("/srv/a")
		now.API = "https://staging.example/functions/v1"
		e.serves = &now
		moved := held(t, e)
		if !moved.Moved.API || moved.Moved.Helpdesk {
			t.Fatalf("moved %+v, want the API", moved.Moved)
		}
		if !strings.Contains(moved.Error(), "confirm-move --api https://staging.example/functions/v1") {
			t.Errorf("error %q names no command", moved)
		}
		// The URL as configured, in another spelling, names the same API.
		if _, err := tbsync.ConfirmMove(t.Context(), e.store, now, tbsync.Serves{API: "HTTPS://staging.example/functions/v1/"}); err != nil {
			t.Fatal(err)
		}
		runs(t, e)
	})
}

func TestServesKeyRotatedRuns(t *testing.T) {
	backends(t, func(t *testing.T, e *env) {
		synced(t, e)
		e.key = e.ts.Keys.AdminTicketsWrite // a new key of the same organisation
		now := e.servesAt("/srv/a")
		runs(t, e)
		if got := recorded(t, e); got != now {
			t.Fatalf("recorded %+v, want the new key's %+v", got, now)
		}
	})
}

func TestServesKeyOfAnotherOrganisationIsHeld(t *testing.T) {
	backends(t, func(t *testing.T, e *env) {
		synced(t, e)
		e.key = e.ts.Keys.OtherTicketsWrite
		now := e.servesAt("/srv/a")
		moved := held(t, e)
		if !moved.Moved.Key || moved.Read != 1 {
			t.Fatalf("moved %+v (read %d), want the key, refused once", moved.Moved, moved.Read)
		}
		if !strings.Contains(moved.Error(), "--key "+now.Key) {
			t.Errorf("error %q names no command", moved)
		}
		if strings.Contains(moved.Error(), e.key) {
			t.Fatal("the error holds the API key")
		}
		if _, err := tbsync.ConfirmMove(t.Context(), e.store, now, tbsync.Serves{Key: now.Key}); err != nil {
			t.Fatal(err)
		}
		e.open()
		if _, err := e.engine.RunCycle(t.Context()); err != nil {
			t.Fatalf("cycle after the confirmation: %v", err)
		}
		if got := recorded(t, e); got != now {
			t.Fatalf("recorded %+v, want %+v", got, now)
		}
	})
}

func TestServesAllowMoveRuns(t *testing.T) {
	backends(t, func(t *testing.T, e *env) {
		synced(t, e)
		if err := e.cfg.AllowMove.EnvDecode("helpdesk"); err != nil {
			t.Fatal(err)
		}
		now := e.servesAt("/srv/b")
		runs(t, e)
		if got := recorded(t, e); got != now {
			t.Fatalf("recorded %+v, want %+v", got, now)
		}
		if !strings.Contains(e.logs.String(), "TICKETBRIDGE_ALLOW_MOVE") {
			t.Error("the move allowed is not logged")
		}
	})
}

// A backup restored against the same API and helpdesk needs no
// confirmation.
func TestServesRestoredBackupRuns(t *testing.T) {
	e := newEnv(t)
	synced(t, e)
	bak := filepath.Join(t.TempDir(), "state.backup")
	if err := e.store.BackupFile(t.Context(), bak); err != nil {
		t.Fatal(err)
	}
	e.store.Close()
	e.store = nil
	e.path = bak
	runs(t, e)
}

func TestMovesEnvDecode(t *testing.T) {
	var m tbsync.Moves
	if err := m.EnvDecode(" API, helpdesk ,key"); err != nil || m != (tbsync.Moves{API: true, Helpdesk: true, Key: true}) {
		t.Fatalf("%+v, %v", m, err)
	}
	if err := m.EnvDecode(""); err != nil || m.Any() {
		t.Fatalf("%+v, %v", m, err)
	}
	if err := m.EnvDecode("api,host"); err == nil || !strings.Contains(err.Error(), "TICKETBRIDGE_ALLOW_MOVE") {
		t.Fatalf("a bad item: %v", err)
	}
}

// The state never holds the key, and the fingerprint tells keys apart.
func TestKeyFingerprint(t *testing.T) {
	a, b := tbsync.KeyFingerprint("rta_one"), tbsync.KeyFingerprint("rta_two")
	if a == b || len(a) != 12 || strings.Contains(a, "rta_") {
		t.Fatalf("fingerprints %q and %q", a, b)
	}
	if tbsync.KeyFingerprint("") != "" {
		t.Fatal("no key has a fingerprint")
	}
}
