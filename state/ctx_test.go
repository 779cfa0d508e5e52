package state

import (
	"context"
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// metaOf reads meta key k on a fresh context.
func metaOf(t *testing.T, s *Store, k string) (string, bool) {
	t.Helper()
	var v string
	var ok bool
	if err := s.View(t.Context(), func(tx *Tx) error {
		var err error
		v, ok, err = tx.Meta(k)
		return err
	}); err != nil {
		t.Fatalf("read meta %s: %v", k, err)
	}
	return v, ok
}

// A View or Update whose context ends before it returns fails with the
// context's error and keeps nothing; one whose context has ended does not
// start. Afterwards the store works on as before: on PostgreSQL, with a
// pool of one connection, the cancelled transactions gave theirs back.
func TestContextEndsTransaction(t *testing.T) {
	eachBackend(t, func(t *testing.T, b testBackend) {
		loc := b.location(t)
		if IsURL(loc) {
			u, err := url.Parse(loc)
			if err != nil {
				t.Fatal(err)
			}
			q := u.Query()
			q.Set("pool_max_conns", "1")
			u.RawQuery = q.Encode()
			loc = u.String()
		}
		s := openAt(t, loc, Options{})
		update(t, s, func(tx *Tx) error { return tx.SetMeta("before", "1") })

		// An Update whose fn ends the context: nothing is committed.
		ctx, cancel := context.WithCancel(t.Context())
		err := s.Update(ctx, func(tx *Tx) error {
			if _, _, err := tx.Meta("before"); err != nil { // begins, on PostgreSQL
				return err
			}
			if err := tx.SetMeta("cancelled", "1"); err != nil {
				return err
			}
			cancel()
			return nil
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Update whose context ended: %v, want context.Canceled", err)
		}
		if v, ok := metaOf(t, s, "cancelled"); ok {
			t.Fatalf("the cancelled Update committed: cancelled=%q", v)
		}

		// A View whose context ends mid-way: the reads after it fail on
		// PostgreSQL, and the View fails on both.
		ctx, cancel = context.WithCancel(t.Context())
		var later error
		err = s.View(ctx, func(tx *Tx) error {
			if _, _, err := tx.Meta("before"); err != nil {
				return err
			}
			cancel()
			_, _, later = tx.Meta("other")
			return nil
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("View whose context ended: %v, want context.Canceled", err)
		}
		if IsURL(loc) && !errors.Is(later, context.Canceled) {
			t.Fatalf("a read after the context ended: %v, want context.Canceled", later)
		}

		// A context already done: fn does not run.
		for name, run := range map[string]func(context.Context, func(*Tx) error) error{
			"View": s.View, "ViewWorkingSet": s.ViewWorkingSet, "Update": s.Update,
		} {
			ran := false
			if err := run(ctx, func(*Tx) error { ran = true; return nil }); !errors.Is(err, context.Canceled) || ran {
				t.Errorf("%s on a done context: %v (fn ran: %t), want context.Canceled before fn", name, err, ran)
			}
		}
		if _, err := s.Stats(ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("Stats on a done context: %v, want context.Canceled", err)
		}
		if _, err := Open(ctx, loc, Options{}); !errors.Is(err, context.Canceled) {
			t.Errorf("Open on a done context: %v, want context.Canceled", err)
		}

		update(t, s, func(tx *Tx) error { return tx.SetMeta("after", "1") })
		if v, ok := metaOf(t, s, "after"); !ok || v != "1" {
			t.Fatalf("the store after cancelled transactions: after=%q, %t", v, ok)
		}
	})
}

// On PostgreSQL, an Update whose commit waits on the database (here on a
// lock another session holds) returns when its context ends, with the
// context's error, and commits nothing, also once the lock is released:
// the server is asked to cancel the statement, so the pipelined COMMIT
// does not run after the caller was told it failed.
func TestPostgresContextEndsRoundTrip(t *testing.T) {
	b := postgresBackend(t)
	loc := b.location(t)
	s := openAt(t, loc, Options{})

	// Another session locks the hotel's row: every commit waits for it.
	lockCtx, lockCancel := context.WithTimeout(context.Background(), time.Minute)
	defer lockCancel()
	locker, err := pgx.Connect(lockCtx, loc)
	if err != nil {
		t.Fatalf("connect: %v", hideSecret(err, pgPassword(loc)))
	}
	defer locker.Close(context.WithoutCancel(lockCtx))
	lockTx, err := locker.Begin(lockCtx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lockTx.Exec(lockCtx, `SELECT 1 FROM `+pgHotelsTable+` WHERE hotel = $1 FOR UPDATE`, s.Hotel()); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- s.Update(ctx, func(tx *Tx) error { return tx.SetMeta("blocked", "1") })
	}()
	// Wait until the commit waits on the lock: the server says so.
	for {
		var waiting bool
		if err := locker.QueryRow(lockCtx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE pg_backend_pid() = ANY (pg_blocking_pids(pid)))`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("the Update ended before it waited on the lock: %v", err)
		default:
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Update cancelled while it waited: %v, want context.Canceled", err)
	}
	if err := lockTx.Commit(lockCtx); err != nil {
		t.Fatal(err)
	}
	// Whatever ran on the server has ended once a commit of ours gets
	// through: it waits for the same row.
	update(t, s, func(tx *Tx) error { return tx.SetMeta("after", "1") })
	if v, ok := metaOf(t, s, "blocked"); ok {
		t.Fatalf("the cancelled Update committed after the lock was released: blocked=%q", v)
	}
}
