package state

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/ticketbridge/ticketbridge/internal/redact"
	bolt "go.etcd.io/bbolt"
)

// The tests in this file are the state conformance suite: what the engine
// relies on, checked on every backend (see eachBackend). The other
// backend-neutral tests of the package run on every backend too.

// A ticket keeps the status both sides agreed on and its last reconcile;
// a record stored before they existed reads as unknown.
func TestConformanceTicketAgreedStatus(t *testing.T) {
	eachBackend(t, func(t *testing.T, b testBackend) {
		s, _ := b.openTest(t, Options{})
		at := time.Date(2026, 5, 1, 10, 0, 0, 0, time.FixedZone("CEST", 2*3600))
		rawPut(t, s, bucketTickets, "old", `{"v":1,"id":"old","ref":"r1","upstream_status":"new"}`)
		update(t, s, func(tx *Tx) error {
			return tx.PutTicket(Ticket{ID: "t1", AgreedStatus: "in_progress", ReconciledAt: at, LastReconcile: "agreed", ReconcileSoon: true})
		})
		view(t, s, func(tx *Tx) error {
			old, _, err := tx.Ticket("old")
			if err != nil {
				return err
			}
			if old.AgreedStatus != "" || !old.ReconciledAt.IsZero() || old.ReconcileSoon {
				t.Errorf("a record without agreed status reads as %+v, want it unknown", old)
			}
			got, _, err := tx.Ticket("t1")
			if err != nil {
				return err
			}
			if got.AgreedStatus != "in_progress" || !got.ReconciledAt.Equal(at) || got.LastReconcile != "agreed" || !got.ReconcileSoon {
				t.Errorf("ticket reads back as %+v", got)
			}
			return nil
		})
	})
}

// A ticket keeps the fields last carried to the helpdesk, through the
// cache and across reopens; a record stored before they existed reads as
// never carried, and a record with a field this version does not know
// (what an older ticketbridge sees of "carried") still reads.
func TestConformanceTicketCarried(t *testing.T) {
	eachBackend(t, func(t *testing.T, b testBackend) {
		s, loc := b.openTest(t, Options{})
		at := time.Date(2026, 5, 1, 10, 0, 0, 0, time.FixedZone("CEST", 2*3600))
		want := Fields{At: at, Department: "fo", Title: "Kettle, room 12", Due: at.Add(26 * time.Hour),
			Rated: true, Rating: 0, Comment: "VIP guest", Priority: "high"}
		rawPut(t, s, bucketTickets, "old", `{"v":1,"id":"old","ref":"r1","upstream_status":"new"}`)
		rawPut(t, s, bucketTickets, "newer", `{"v":1,"id":"newer","ref":"r2","colour":{"x":1}}`)
		update(t, s, func(tx *Tx) error { return tx.PutTicket(Ticket{ID: "t1", Ref: "r3", Carried: want}) })
		check := func(s *Store) {
			for range 2 { // decoded, then from the cache
				view(t, s, func(tx *Tx) error {
					old, _, err := tx.Ticket("old")
					if err != nil {
						return err
					}
					if old.Carried.Known() || old.Carried != (Fields{}) {
						t.Errorf("a record without carried fields reads as %+v, want none carried", old.Carried)
					}
					if _, ok, err := tx.Ticket("newer"); err != nil || !ok {
						t.Errorf("a record with an unknown field: ok %v, %v", ok, err)
					}
					got, _, err := tx.Ticket("t1")
					if err != nil {
						return err
					}
					w := want
					w.At, w.Due = at.UTC(), want.Due.UTC()
					if got.Carried != w || !got.Carried.Known() {
						t.Errorf("carried fields read back as %+v, want %+v", got.Carried, w)
					}
					return nil
				})
			}
		}
		check(s)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s = openAt(t, loc, Options{})
		check(s)
		err := s.Update(t.Context(), func(tx *Tx) error {
			return tx.PutTicket(Ticket{ID: "t2", Carried: Fields{Title: "no time"}})
		})
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("carried fields without their time: %v, want ErrInvalid", err)
		}
	})
}

// The journal lists entries in the order they were journaled, across
// Updates and reopens, and a sequence number is never handed out twice.
func TestConformanceJournalOrder(t *testing.T) {
	eachBackend(t, func(t *testing.T, b testBackend) {
		s, loc := b.openTest(t, Options{})
		update(t, s, func(tx *Tx) error {
			for _, id := range []string{"t1", "t2"} {
				if err := tx.PutTicket(Ticket{ID: id}); err != nil {
					return err
				}
			}
			return nil
		})
		// Event ids sort against the journal order, so that a list in key
		// order would show.
		ids := []string{"e9", "e5", "e7", "e1"}
		for i, id := range ids {
			update(t, s, func(tx *Tx) error {
				_, err := tx.PutJournal(reply(id, []string{"t1", "t2"}[i%2], "body "+id))
				return err
			})
		}
		// A failed Update takes its sequence numbers with it on bbolt; on
		// either backend no stored entry shares one.
		_ = s.Update(t.Context(), func(tx *Tx) error {
			if _, err := tx.PutJournal(reply("e0", "t1", "lost")); err != nil {
				return err
			}
			return errors.New("boom")
		})
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s = openAt(t, loc, Options{})
		update(t, s, func(tx *Tx) error {
			_, err := tx.PutJournal(reply("e3", "t2", "after reopen"))
			return err
		})
		// Moving an entry between states keeps its place.
		update(t, s, func(tx *Tx) error {
			e, _, err := tx.JournalEntry("e5")
			if err != nil {
				return err
			}
			e.State = Failed
			if _, err := tx.PutJournal(e); err != nil {
				return err
			}
			e.State = Pending
			_, err = tx.PutJournal(e)
			return err
		})
		view(t, s, func(tx *Tx) error {
			p, err := tx.PendingJournal()
			if err != nil {
				return err
			}
			if got, want := eventIDs(p), []string{"e9", "e5", "e7", "e1", "e3"}; !reflect.DeepEqual(got, want) {
				t.Errorf("PendingJournal = %v, want %v (journal order)", got, want)
			}
			seen := map[uint64]string{}
			for i, e := range p {
				if i > 0 && e.Seq <= p[i-1].Seq {
					t.Errorf("Seq of %s = %d after %d", e.EventID, e.Seq, p[i-1].Seq)
				}
				if other, dup := seen[e.Seq]; dup {
					t.Errorf("Seq %d given to %s and %s", e.Seq, other, e.EventID)
				}
				seen[e.Seq] = e.EventID
			}
			t2, err := tx.JournalForTicket("t2")
			if got, want := eventIDs(t2), []string{"e5", "e1", "e3"}; err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("JournalForTicket(t2) = %v, %v; want %v", got, err, want)
			}
			return nil
		})
	})
}

// A cursor stored in the Update that journals the events it moves past
// is stored with them or not at all; read in the same Update, both show.
func TestConformanceCursorMovesOnlyPastStoredWork(t *testing.T) {
	eachBackend(t, func(t *testing.T, b testBackend) {
		s, _ := b.openTest(t, Options{})
		update(t, s, func(tx *Tx) error {
			if err := tx.PutTicket(Ticket{ID: "t1"}); err != nil {
				return err
			}
			return tx.SetCursor("changes", "10")
		})
		// The events and the cursor past them, in one Update that fails
		// at its end: neither is kept.
		boom := errors.New("boom")
		err := s.Update(t.Context(), func(tx *Tx) error {
			for _, id := range []string{"e1", "e2"} {
				if _, err := tx.PutJournal(reply(id, "t1", id)); err != nil {
					return err
				}
			}
			if err := tx.SetCursor("changes", "12"); err != nil {
				return err
			}
			// Inside the Update its own writes show.
			c, err := tx.Cursor("changes")
			if err != nil || c != "12" {
				t.Errorf("Cursor inside the Update = %q, %v; want 12", c, err)
			}
			p, err := tx.PendingJournal()
			if got := eventIDs(p); err != nil || !reflect.DeepEqual(got, []string{"e1", "e2"}) {
				t.Errorf("PendingJournal inside the Update = %v, %v", got, err)
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("Update: err = %v, want boom", err)
		}
		view(t, s, func(tx *Tx) error {
			c, err := tx.Cursor("changes")
			if err != nil || c != "10" {
				t.Errorf("cursor after the failed Update = %q, %v; want 10", c, err)
			}
			p, err := tx.PendingJournal()
			if err != nil || len(p) != 0 {
				t.Errorf("journal after the failed Update = %v, %v; want empty", eventIDs(p), err)
			}
			return nil
		})
		// One refused event refuses nothing else when the caller goes on,
		// and the cursor moves with what was stored.
		update(t, s, func(tx *Tx) error {
			if _, err := tx.PutJournal(reply("e1", "t1", "e1")); err != nil {
				return err
			}
			if _, err := tx.PutJournal(reply("e2", "t404", "e2")); !errors.Is(err, ErrInvalid) {
				t.Errorf("PutJournal for a ticket not in state: err = %v, want ErrInvalid", err)
			}
			return tx.SetCursor("changes", "12")
		})
		view(t, s, func(tx *Tx) error {
			c, _ := tx.Cursor("changes")
			p, err := tx.PendingJournal()
			if c != "12" || err != nil || !reflect.DeepEqual(eventIDs(p), []string{"e1"}) {
				t.Errorf("after the Update: cursor %q, journal %v, %v; want 12 and e1", c, eventIDs(p), err)
			}
			return nil
		})
	})
}

// crashEnv names the state a crash helper process opens; crashStep says
// what it does before it dies.
const (
	crashEnv     = "TICKETBRIDGE_STATE_TEST_CRASH"
	crashStepEnv = "TICKETBRIDGE_STATE_TEST_CRASH_STEP"
)

// TestHelperProcessCrash is not a test of its own: TestConformanceCrash
// runs the test binary again with crashEnv set. It journals e1 and stores
// the cursor past it (one Update), then, in a second Update, marks e1 sent
// and journals e2, and exits without returning: the process dies between
// the writes of an Update, as a SIGKILL or a power cut would end it.
func TestHelperProcessCrash(t *testing.T) {
	loc := os.Getenv(crashEnv)
	if loc == "" {
		t.Skip("helper for TestConformanceCrash")
	}
	s, err := Open(t.Context(), loc, Options{})
	if err != nil {
		fmt.Println("OPEN-ERROR", err)
		os.Exit(3)
	}
	err = s.Update(t.Context(), func(tx *Tx) error {
		if err := tx.PutTicket(Ticket{ID: "t1"}); err != nil {
			return err
		}
		if _, err := tx.PutJournal(reply("e1", "t1", "first")); err != nil {
			return err
		}
		return tx.SetCursor("changes", "1")
	})
	if err != nil {
		fmt.Println("UPDATE-ERROR", err)
		os.Exit(3)
	}
	_ = s.Update(t.Context(), func(tx *Tx) error {
		e, _, err := tx.JournalEntry("e1")
		if err != nil {
			return err
		}
		e.State, e.SentAt, e.UpstreamMessageID = Sent, t0, "m1"
		if _, err := tx.PutJournal(e); err != nil {
			return err
		}
		if err := tx.MarkOwn("t1", "m1", "e1", t0, MessageInfo{}); err != nil {
			return err
		}
		if _, err := tx.PutJournal(reply("e2", "t1", "second")); err != nil {
			return err
		}
		if err := tx.SetCursor("changes", "2"); err != nil {
			return err
		}
		fmt.Println("DYING")
		os.Exit(7) // between the writes and the commit
		return nil
	})
	os.Exit(4)
}

// A process that dies inside an Update leaves the state of the Update
// before: the first Update's work, nothing of the second.
func TestConformanceCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a subprocess")
	}
	eachBackend(t, func(t *testing.T, b testBackend) {
		loc := b.location(t)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperProcessCrash$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashEnv+"="+loc)
		out, _ := cmd.Output()
		if code := cmd.ProcessState.ExitCode(); code != 7 || !strings.Contains(string(out), "DYING") {
			t.Fatalf("helper: exit %d, output %q; want it to die with 7", code, out)
		}
		s := openAt(t, loc, Options{})
		view(t, s, func(tx *Tx) error {
			e, ok, err := tx.JournalEntry("e1")
			if err != nil || !ok || e.State != Pending {
				t.Errorf("e1 = %+v, %t, %v; want it pending, as the first Update left it", e, ok, err)
			}
			if _, ok, _ := tx.JournalEntry("e2"); ok {
				t.Errorf("e2 is journaled; the second Update never committed")
			}
			if own, _ := tx.IsOwn("t1", "m1"); own {
				t.Errorf("m1 is marked own; the second Update never committed")
			}
			if c, _ := tx.Cursor("changes"); c != "1" {
				t.Errorf("cursor = %q, want 1 (past the stored work only)", c)
			}
			return nil
		})
		// The next run carries on where the first Update left off.
		update(t, s, func(tx *Tx) error {
			e, err := tx.PutJournal(reply("e2", "t1", "second"))
			if err == nil && e.Seq != 2 {
				t.Errorf("e2 got Seq %d, want 2", e.Seq)
			}
			return err
		})
	})
}

// The schema version is stored; a newer one is refused on open, an older
// one is refused by a read-only open and migrated by a read-write one.
func TestConformanceSchemaVersion(t *testing.T) {
	eachBackend(t, func(t *testing.T, b testBackend) {
		s, loc := b.openTest(t, Options{})
		want := SchemaVersion
		if IsURL(loc) {
			want = PostgresSchemaVersion
		}
		if s.Schema() != want {
			t.Errorf("Schema = %d, want %d", s.Schema(), want)
		}
		view(t, s, func(tx *Tx) error {
			v, ok, err := tx.Meta(metaSchema)
			if err != nil || !ok || v != fmt.Sprint(want) {
				t.Errorf("Meta(schema_version) = %q, %t, %v", v, ok, err)
			}
			return nil
		})
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		setSchema(t, loc, want+1)
		for _, ro := range []bool{false, true} {
			_, err := Open(t.Context(), loc, Options{ReadOnly: ro})
			if !errors.Is(err, ErrNewerSchema) || !strings.Contains(err.Error(), fmt.Sprintf("schema %d", want+1)) {
				t.Errorf("Open (read-only %t) of a newer schema: err = %v, want ErrNewerSchema naming it", ro, err)
			}
		}
		setSchema(t, loc, want)
		openAt(t, loc, Options{ReadOnly: true})
	})
}

// setSchema writes the schema version behind the store's back.
func setSchema(t *testing.T, loc string, v int) {
	t.Helper()
	if !IsURL(loc) {
		rawFile(t, loc, func(btx *bolt.Tx) error { return putRaw(btx, bucketMeta, metaSchema, fmt.Sprint(v)) })
		return
	}
	pgExec(t, loc, `UPDATE `+pgSchemaTable+` SET version = $1`, v)
}

// pgExec runs one statement on the database at loc (with its search_path).
func pgExec(t *testing.T, loc, sql string, args ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, loc)
	if err != nil {
		t.Fatalf("connect: %v", hideSecret(err, pgPassword(loc)))
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// PostgreSQL's migrations run forward in one transaction; a failing one
// leaves the schema as it was.
func TestPostgresMigrations(t *testing.T) {
	b := postgresBackend(t)
	loc := b.location(t)
	cur := pgMigrations
	n := len(cur)
	s, err := openPG(t.Context(), loc, Options{}, cur)
	if err != nil {
		t.Fatal(err)
	}
	update(t, s, func(tx *Tx) error { return tx.PutTicket(Ticket{ID: "t1"}) })
	_ = s.Close()

	bad := append(slices.Clone(cur), pgMigration{
		`CREATE TABLE ticketbridge_extra (x int)`,
		`SELECT no_such_function()`,
	})
	if _, err := openPG(t.Context(), loc, Options{}, bad); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("migrate schema %d to %d", n, n+1)) {
		t.Fatalf("open with a failing migration: err = %v", err)
	}
	if s, err = openPG(t.Context(), loc, Options{}, cur); err != nil {
		t.Fatalf("after a failed migration the old schema does not open: %v", err)
	}
	_ = s.Close()

	good := append(slices.Clone(cur), pgMigration{`CREATE TABLE ticketbridge_extra (x int)`})
	var logs strings.Builder
	s, err = openPG(t.Context(), loc, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}, good)
	if err != nil {
		t.Fatal(err)
	}
	if s.Schema() != n+1 || !strings.Contains(logs.String(), "state database migrated") {
		t.Errorf("Schema = %d, log %q; want %d and a warning", s.Schema(), logs.String(), n+1)
	}
	view(t, s, func(tx *Tx) error {
		if _, ok, err := tx.Ticket("t1"); !ok || err != nil {
			t.Errorf("t1 lost by the migration: %t, %v", ok, err)
		}
		return nil
	})
	_ = s.Close()
	if _, err := openPG(t.Context(), loc, Options{}, cur); !errors.Is(err, ErrNewerSchema) {
		t.Errorf("older binary on a migrated database: err = %v, want ErrNewerSchema", err)
	}
	if _, err := openPG(t.Context(), b.location(t), Options{ReadOnly: true}, cur); !errors.Is(err, ErrNotStateFile) {
		t.Errorf("read-only open of an empty database: err = %v, want ErrNotStateFile", err)
	}
}

// A database of the first schema (before leases) migrates to the current
// one, keeping its rows, and takes writes afterwards.
func TestPostgresMigratesFromSchema1(t *testing.T) {
	b := postgresBackend(t)
	loc := b.location(t)
	s, err := openPG(t.Context(), loc, Options{Hotel: "h1"}, pgMigrations[:1])
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	pgExec(t, loc, `INSERT INTO `+pgStateTable+` (hotel, bucket, key, value) SELECT 'h1', bucket, 'k', 'v' FROM unnest(ARRAY['meta']) AS b(bucket)`)
	s, err = openPG(t.Context(), loc, Options{Hotel: "h1"}, pgMigrations)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Schema() != PostgresSchemaVersion {
		t.Errorf("Schema = %d, want %d", s.Schema(), PostgresSchemaVersion)
	}
	update(t, s, func(tx *Tx) error { return tx.PutTicket(Ticket{ID: "t1"}) })
	view(t, s, func(tx *Tx) error {
		if v, ok, err := tx.Meta("k"); !ok || err != nil || v != "v" {
			t.Errorf("a row of schema 1 after the migration: %q, %t, %v", v, ok, err)
		}
		return nil
	})
}

func TestPostgresMigrationsMatchSchemaVersion(t *testing.T) {
	if len(pgMigrations) != PostgresSchemaVersion {
		t.Errorf("len(pgMigrations) = %d, want PostgresSchemaVersion = %d", len(pgMigrations), PostgresSchemaVersion)
	}
}

// Hotels in one database share nothing.
func TestPostgresHotelsAreApart(t *testing.T) {
	b := postgresBackend(t)
	loc := b.location(t)
	a := openAt(t, loc, Options{Hotel: "alpha"})
	c := openAt(t, loc, Options{Hotel: "beta"})
	if a.Hotel() != "alpha" || c.Hotel() != "beta" {
		t.Fatalf("Hotel = %q, %q", a.Hotel(), c.Hotel())
	}
	for _, s := range []*Store{a, c} {
		update(t, s, func(tx *Tx) error {
			if err := tx.PutTicket(Ticket{ID: "t-" + s.Hotel()}); err != nil {
				return err
			}
			if err := tx.PutMirrored("t-"+s.Hotel(), "m1", "h-"+s.Hotel(), t0, MessageInfo{}); err != nil {
				return err
			}
			_, err := tx.PutJournal(reply("e-"+s.Hotel(), "t-"+s.Hotel(), s.Hotel()))
			return err
		})
	}
	for _, s := range []*Store{a, c} {
		view(t, s, func(tx *Tx) error {
			var ids []string
			_ = tx.ForEachTicket(func(tk Ticket) error { ids = append(ids, tk.ID); return nil })
			if want := []string{"t-" + s.Hotel()}; !reflect.DeepEqual(ids, want) {
				t.Errorf("hotel %s sees tickets %v, want %v", s.Hotel(), ids, want)
			}
			p, _ := tx.PendingJournal()
			if len(p) != 1 || p[0].Seq != 1 {
				t.Errorf("hotel %s journal = %+v, want its own entry with Seq 1", s.Hotel(), p)
			}
			return nil
		})
		st, err := s.Stats(t.Context())
		if err != nil || st.Tickets != 1 || st.Mirrored != 1 || st.JournalPending != 1 {
			t.Errorf("Stats of %s = %+v, %v", s.Hotel(), st, err)
		}
	}
	if _, err := Open(t.Context(), loc, Options{Hotel: "Bad_Name"}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "Bad_Name") {
		t.Errorf("Open with a bad hotel name: err = %v", err)
	}
	if _, err := Open(t.Context(), loc, Options{Hotel: "gamma", ReadOnly: true}); !errors.Is(err, ErrNotStateFile) || !strings.Contains(err.Error(), `"gamma"`) {
		t.Errorf("read-only Open of an unknown hotel: err = %v, want ErrNotStateFile naming it", err)
	}
}

// Two writers of one hotel: on bbolt the file lock keeps the second out;
// on PostgreSQL the Update that did not see the other's commit fails with
// ErrConflict and keeps nothing.
func TestConformanceSecondWriter(t *testing.T) {
	eachBackend(t, func(t *testing.T, b testBackend) {
		s, loc := b.openTest(t, Options{})
		seed(t, s)
		if b.name == "bbolt" {
			if _, err := Open(t.Context(), loc, Options{LockTimeout: 10 * time.Millisecond}); !errors.Is(err, ErrLocked) {
				t.Errorf("second Open: err = %v, want ErrLocked", err)
			}
			return
		}
		other := openAt(t, loc, Options{})
		err := s.Update(t.Context(), func(tx *Tx) error {
			tk, _, err := tx.Ticket("t1") // the snapshot is taken here
			if err != nil {
				return err
			}
			update(t, other, func(tx *Tx) error { return tx.PutTicket(Ticket{ID: "t1", LastError: "other"}) })
			tk.LastError = "stale"
			return tx.PutTicket(tk)
		})
		if !errors.Is(err, ErrConflict) {
			t.Fatalf("stale Update: err = %v, want ErrConflict", err)
		}
		view(t, s, func(tx *Tx) error {
			tk, _, _ := tx.Ticket("t1")
			if tk.LastError != "other" {
				t.Errorf("t1.LastError = %q, want the other writer's", tk.LastError)
			}
			return nil
		})
		// The store works on after a conflict.
		update(t, s, func(tx *Tx) error { return tx.SetMeta("after", "conflict") })
	})
}

// The password of the URL appears in no error and no Path.
func TestPostgresPasswordIsRedacted(t *testing.T) {
	const secret = "s3cret-Pa55word"
	for _, bad := range []string{
		"postgres://tb:" + secret + "@127.0.0.1:1/db?connect_timeout=1",
		"postgres://tb:" + secret + "@127.0.0.1:1/db?sslmode=bogus",
		"postgresql://127.0.0.1:1/db?password=" + secret + "&connect_timeout=1",
		"postgres://tb:" + secret + "@[::1/db",
	} {
		_, err := Open(t.Context(), bad, Options{})
		if err == nil {
			t.Errorf("Open(t.Context(), %s) succeeded", redact.URL(bad))
			continue
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error shows the password: %v", err)
		}
		if !strings.Contains(err.Error(), "open state postgres") {
			t.Errorf("error %q does not say what failed", err)
		}
	}
	base := os.Getenv(postgresEnv)
	if base == "" {
		t.Skip(postgresSkip)
	}
	loc := pgSchemaURL(t, base)
	s := openAt(t, loc, Options{})
	if pw := pgPassword(loc); pw != "" && strings.Contains(s.Path(), pw) {
		t.Errorf("Path shows the password: %s", s.Path())
	}
	// A wrong password is refused by the server; the error names neither.
	u := strings.Replace(loc, ":"+pgPassword(loc)+"@", ":"+secret+"@", 1)
	if u == loc {
		t.Skip(postgresEnv + " holds no password to replace")
	}
	_, err := Open(t.Context(), u, Options{})
	if err == nil || strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), pgPassword(loc)) {
		t.Errorf("Open with a wrong password: err = %v; want an error without the password", err)
	}
}

// A copy of a PostgreSQL hotel is a bbolt state file with the same
// records, which carries on the journal's sequence.
func TestPostgresBackupIsABoltFile(t *testing.T) {
	b := postgresBackend(t)
	s, _ := b.openTest(t, Options{Hotel: "copied"})
	seed(t, s)
	dest := filepath.Join(t.TempDir(), "copy.db")
	if err := s.BackupFile(context.Background(), dest); err != nil {
		t.Fatal(err)
	}
	c := openAt(t, dest, Options{})
	// Only bbolt keeps the schema version among the meta keys.
	got := strings.Replace(dump(t, c), fmt.Sprintf("meta/schema_version=%d\n", SchemaVersion), "", 1)
	if want := dump(t, s); got != want {
		t.Errorf("copy differs:\n got %s\nwant %s", got, want)
	}
	update(t, c, func(tx *Tx) error {
		e, err := tx.PutJournal(reply("e2", "t1", "next"))
		if err == nil && e.Seq != 2 {
			t.Errorf("Seq in the copy = %d, want 2", e.Seq)
		}
		return err
	})
}

// A cycle's write transaction costs one round trip on PostgreSQL however
// much it writes; each read the transaction's own writes cannot answer
// costs one more.
func TestPostgresRoundTrips(t *testing.T) {
	b := postgresBackend(t)
	s, _ := b.openTest(t, Options{})
	rt := func(fn func()) int64 {
		before := s.pg.pool.Load().roundTrips.Load()
		fn()
		return s.pg.pool.Load().roundTrips.Load() - before
	}
	if n := rt(func() {
		update(t, s, func(tx *Tx) error {
			for i := range 100 {
				id := fmt.Sprintf("t%03d", i)
				if err := tx.PutTicket(Ticket{ID: id, CreatedAt: t0}); err != nil {
					return err
				}
				for m := range 5 {
					if err := tx.PutMirrored(id, fmt.Sprintf("m%d", m), "h", t0, MessageInfo{}); err != nil {
						return err
					}
				}
			}
			return tx.SetCursor("changes", "1")
		})
	}); n != 1 {
		t.Errorf("write-only Update of 600 records: %d round trips, want 1", n)
	}
	if n := rt(func() {
		update(t, s, func(tx *Tx) error {
			if _, ok, err := tx.Ticket("t001"); !ok || err != nil { // BEGIN and the read
				return fmt.Errorf("t001: %t, %v", ok, err)
			}
			if _, err := tx.PutJournal(reply("e1", "t001", "x")); err != nil { // reads e1; t001 was read
				return err
			}
			return tx.PutTicket(Ticket{ID: "t001", CreatedAt: t0})
		})
	}); n != 3 {
		t.Errorf("Update with two reads: %d round trips, want 3", n)
	}
	if n := rt(func() {
		view(t, s, func(tx *Tx) error {
			_, err := tx.PendingJournal() // index scan, then the entries
			return err
		})
	}); n != 3 {
		t.Errorf("View listing the pending journal: %d round trips, want 3 (with COMMIT)", n)
	}
}

// A connection lost inside an Update fails it, keeps nothing of it, and
// the store goes on with a new connection.
func TestPostgresLostConnection(t *testing.T) {
	b := postgresBackend(t)
	s, loc := b.openTest(t, Options{})
	seed(t, s)
	before := dump(t, s)
	err := s.Update(t.Context(), func(tx *Tx) error {
		if _, _, err := tx.Ticket("t1"); err != nil { // the transaction begins
			return err
		}
		if err := tx.PutTicket(Ticket{ID: "t9"}); err != nil {
			return err
		}
		pid := tx.kv.(*pgTx).conn.Conn().PgConn().PID()
		pgExec(t, loc, `SELECT pg_terminate_backend($1)`, int32(pid))
		return nil
	})
	if err == nil || !strings.HasPrefix(err.Error(), "commit state postgres://") {
		t.Fatalf("Update on a terminated connection: err = %v, want a commit error", err)
	}
	t.Log(err)
	if after := dump(t, s); after != before {
		t.Errorf("state changed by the failed Update:\nbefore %s\nafter  %s", before, after)
	}
	update(t, s, func(tx *Tx) error { return tx.PutTicket(Ticket{ID: "t9"}) })
	view(t, s, func(tx *Tx) error {
		if _, ok, err := tx.Ticket("t9"); !ok || err != nil {
			t.Errorf("t9 after recovery: %t, %v", ok, err)
		}
		return nil
	})
}

// A mirrored or own message record keeps who wrote the message, when, and
// its first words; a record stored before it kept them reads as before,
// with none.
func TestConformanceMessageInfo(t *testing.T) {
	eachBackend(t, func(t *testing.T, b testBackend) {
		s, _ := b.openTest(t, Options{})
		written := time.Date(2026, 5, 1, 9, 30, 0, 0, time.FixedZone("CEST", 2*3600))
		guest := MessageInfo{AuthorType: "guest", AuthorName: "Mrs Example", WrittenAt: written, FirstWords: "Two more pillows, please…"}
		staff := MessageInfo{AuthorType: "staff", AuthorName: "Ana", WrittenAt: written.Add(time.Hour), FirstWords: "On their way."}
		update(t, s, func(tx *Tx) error {
			if err := tx.PutTicket(Ticket{ID: "t1"}); err != nil {
				return err
			}
			if err := tx.PutMirrored("t1", "m-new", "c-new", t0, guest); err != nil {
				return err
			}
			if err := tx.PutMirrored("t1", "m-bare", "c-bare", t0, MessageInfo{}); err != nil {
				return err
			}
			return tx.MarkOwn("t1", "o-new", "ev-new", t0, staff)
		})
		rawPut(t, s, bucketMirrored, "t1/m-old", `{"v":1,"helpdesk_id":"c-old","at":"2026-05-01T08:00:00Z"}`)
		rawPut(t, s, bucketOwn, "t1/o-old", `{"v":1,"event_id":"ev-old","at":"2026-05-01T08:00:00Z"}`)
		view(t, s, func(tx *Tx) error {
			m, err := tx.Mirrored("t1")
			if err != nil {
				return err
			}
			if got := m["m-new"]; got.HelpdeskID != "c-new" || got.AuthorType != guest.AuthorType || got.AuthorName != guest.AuthorName || !got.WrittenAt.Equal(written) || got.WrittenAt.Location() != time.UTC || got.FirstWords != guest.FirstWords {
				t.Errorf("mirrored message with its info reads back as %+v", got)
			}
			if got := m["m-bare"]; got.HelpdeskID != "c-bare" || got.MessageInfo != (MessageInfo{}) {
				t.Errorf("mirrored message without info reads back as %+v", got)
			}
			if got := m["m-old"]; got.HelpdeskID != "c-old" || got.MessageInfo != (MessageInfo{}) {
				t.Errorf("an older mirrored record reads as %+v", got)
			}
			o, err := tx.OwnMessages("t1")
			if err != nil {
				return err
			}
			if got := o["o-new"]; got.EventID != "ev-new" || got.AuthorName != "Ana" || got.FirstWords != staff.FirstWords || !got.WrittenAt.Equal(staff.WrittenAt) {
				t.Errorf("own message with its info reads back as %+v", got)
			}
			if got := o["o-old"]; got.EventID != "ev-old" || got.MessageInfo != (MessageInfo{}) {
				t.Errorf("an older own record reads as %+v", got)
			}
			return nil
		})
	})
}
