package state

import (
	"errors"
	"os"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ticketbridge/ticketbridge/internal/notify"
)

// TestConformanceNotices: the store keeps the notifications' episodes as
// notify.Journal asks, on both backends: a write over the version it read
// only, a resolved episode with nothing left to send forgotten, the open
// and the unsent ones listed, and all of it still there after a reopen
// (a restart, or the replica that takes the hotel over).
func TestConformanceNotices(t *testing.T) {
	eachBackend(t, func(t *testing.T, b testBackend) {
		s, loc := b.openTest(t, Options{Hotel: "seaside"})
		j := s.Notices()
		ctx := t.Context()
		key := notify.Key{Hotel: "seaside", Kind: notify.Undeliverable, Subject: "outbox/r-1/reply.txt"}
		if _, ok, err := j.Get(ctx, key); ok || err != nil {
			t.Fatalf("Get of nothing: %t, %v", ok, err)
		}
		ep := notify.Episode{Key: key, Version: 1, Since: t0, Cause: "set aside", Fired: true, Count: 1, LastAt: t0,
			Pending: notify.Fired, PendingAt: t0}
		if ok, err := j.Put(ctx, ep, 0); !ok || err != nil {
			t.Fatalf("first Put: %t, %v", ok, err)
		}
		if ok, err := j.Put(ctx, ep, 0); ok || err != nil {
			t.Fatalf("Put over a version it did not read: %t, %v; want false", ok, err)
		}
		other := notify.Episode{Key: notify.Key{Hotel: "seaside", Kind: notify.KeyRefused}, Version: 1, Since: t0}
		if ok, err := j.Put(ctx, other, 0); !ok || err != nil {
			t.Fatalf("Put of another: %t, %v", ok, err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s = openAt(t, loc, Options{Hotel: "seaside"})
		j = s.Notices()
		got, ok, err := j.Get(ctx, key)
		if !ok || err != nil || got != ep {
			t.Fatalf("after a reopen: %+v, %t, %v; want %+v", got, ok, err, ep)
		}
		if open, err := j.Open(ctx, "seaside"); err != nil || len(open) != 2 {
			t.Fatalf("Open: %v, %v; want both", open, err)
		}
		if un, err := j.Unsent(ctx, t0); err != nil || len(un) != 0 {
			t.Fatalf("Unsent before t0: %v, %v; want none", un, err)
		}
		if un, err := j.Unsent(ctx, t0.Add(time.Second)); err != nil || len(un) != 1 || un[0].Key != key {
			t.Fatalf("Unsent after t0: %v, %v; want the pending one", un, err)
		}
		ep2 := ep
		ep2.Version, ep2.Resolved, ep2.Pending = 2, true, ""
		if ok, err := j.Put(ctx, ep2, 1); !ok || err != nil {
			t.Fatalf("resolve: %t, %v", ok, err)
		}
		if _, ok, err := j.Get(ctx, key); ok || err != nil {
			t.Fatalf("a resolved episode with nothing to send is kept: %t, %v", ok, err)
		}
		if open, err := j.Open(ctx, "seaside"); err != nil || len(open) != 1 || open[0].Kind != notify.KeyRefused {
			t.Fatalf("Open after the resolve: %v, %v", open, err)
		}
		if _, err := j.Put(ctx, notify.Episode{Key: notify.Key{Kind: "a/b"}}, 0); !errors.Is(err, ErrInvalid) {
			t.Fatalf("a kind with /: %v, want ErrInvalid", err)
		}
	})
}

// TestNoticesMigration: a file of schema 2 gets the notices bucket when a
// daemon of this version opens it, with a copy of the old file aside.
func TestNoticesMigration(t *testing.T) {
	s, path := openTest(t, Options{})
	seed(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	rawFile(t, path, func(btx *bolt.Tx) error {
		if err := btx.DeleteBucket([]byte(bucketNotices)); err != nil {
			return err
		}
		return putRaw(btx, bucketMeta, metaSchema, "2")
	})
	s = openAt(t, path, Options{})
	if s.Schema() != SchemaVersion {
		t.Fatalf("schema %d after the migration, want %d", s.Schema(), SchemaVersion)
	}
	if ok, err := s.Notices().Put(t.Context(), notify.Episode{Key: notify.Key{Kind: notify.KeyRefused}, Version: 1}, 0); !ok || err != nil {
		t.Fatalf("Put after the migration: %t, %v", ok, err)
	}
	if _, err := os.Stat(path + ".schema-2.bak"); err != nil {
		t.Fatalf("no copy of schema 2 aside: %v", err)
	}
}

// TestNoticesFollowTheState: an episode belongs to the state that keeps
// it, not to the hotel name it was written under: after `hotels adopt`
// moved the one hotel's state (named default) to a hotel of the
// directory, the hotel's reconcile finds its open episodes, under its
// new name, and resolves them.
func TestNoticesFollowTheState(t *testing.T) {
	s, _ := openTest(t, Options{})
	ctx := t.Context()
	old := notify.Episode{Key: notify.Key{Hotel: "default", Kind: notify.KeyRefused}, Version: 1, Since: t0, Fired: true, Count: 1, LastAt: t0}
	if ok, err := s.Notices().Put(ctx, old, 0); !ok || err != nil {
		t.Fatalf("Put: %t, %v", ok, err)
	}
	open, err := s.Notices().Open(ctx, "seaside")
	if err != nil || len(open) != 1 || open[0].Hotel != "seaside" || open[0].Kind != notify.KeyRefused {
		t.Fatalf("Open under the new name: %+v, %v; want the episode, named seaside", open, err)
	}
	renamed := notify.Key{Hotel: "seaside", Kind: notify.KeyRefused}
	got, ok, err := s.Notices().Get(ctx, renamed)
	if !ok || err != nil || got.Hotel != "seaside" || got.Version != 1 {
		t.Fatalf("Get under the new name: %+v, %t, %v", got, ok, err)
	}
	got.Version, got.Resolved = 2, true
	if ok, err := s.Notices().Put(ctx, got, 1); !ok || err != nil {
		t.Fatalf("resolve under the new name: %t, %v", ok, err)
	}
	if open, err := s.Notices().Open(ctx, "seaside"); err != nil || len(open) != 0 {
		t.Fatalf("Open after the resolve: %+v, %v", open, err)
	}
}
