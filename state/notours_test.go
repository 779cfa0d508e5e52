package state

import (
	"os"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The helpdesk tickets that are not this hotel's are kept by upstream id,
// apart from the tracked tickets, and counted by Stats; a deleted
// ticket's fields read back.
func TestConformanceNotOurs(t *testing.T) {
	eachBackend(t, func(t *testing.T, b testBackend) {
		s, _ := b.openTest(t, Options{})
		at := time.Date(2026, 5, 1, 10, 0, 0, 0, time.FixedZone("CEST", 2*3600))
		update(t, s, func(tx *Tx) error {
			if err := tx.PutNotOurs(NotOurs{ID: "b2", Ref: "RT#4", At: at}); err != nil {
				return err
			}
			if err := tx.PutNotOurs(NotOurs{ID: "b1"}); err != nil {
				return err
			}
			return tx.PutTicket(Ticket{ID: "a1", Ref: "RT#3", Retired: true, Missing: 3, Deleted: at})
		})
		if err := s.Update(t.Context(), func(tx *Tx) error { return tx.PutNotOurs(NotOurs{ID: "x/y"}) }); err == nil || !strings.Contains(err.Error(), "invalid") {
			t.Errorf("PutNotOurs of a bad id: %v", err)
		}
		view(t, s, func(tx *Tx) error {
			n, ok, err := tx.NotOurs("b2")
			if err != nil || !ok || n.Ref != "RT#4" || !n.At.Equal(at) || n.At.Location() != time.UTC {
				t.Errorf("NotOurs(b2) = %+v, %t, %v", n, ok, err)
			}
			if _, ok, err := tx.NotOurs("a1"); ok || err != nil {
				t.Errorf("NotOurs(a1), a tracked ticket: %t, %v", ok, err)
			}
			if _, ok, err := tx.Ticket("b2"); ok || err != nil {
				t.Errorf("Ticket(b2), not ours: %t, %v", ok, err)
			}
			var ids []string
			if err := tx.ForEachNotOurs(func(n NotOurs) error { ids = append(ids, n.ID); return nil }); err != nil {
				return err
			}
			if strings.Join(ids, ",") != "b1,b2" {
				t.Errorf("ForEachNotOurs: %v", ids)
			}
			a, _, err := tx.Ticket("a1")
			if err != nil || a.Missing != 3 || !a.Deleted.Equal(at) {
				t.Errorf("Ticket(a1) = %+v, %v", a, err)
			}
			return nil
		})
		st, err := s.Stats(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if st.NotOurs != 2 || st.Deleted != 1 || st.Tickets != 1 {
			t.Errorf("Stats: not ours %d, deleted %d, tickets %d; want 2, 1, 1", st.NotOurs, st.Deleted, st.Tickets)
		}
		update(t, s, func(tx *Tx) error { return tx.DeleteNotOurs("b1") })
		view(t, s, func(tx *Tx) error {
			if _, ok, err := tx.NotOurs("b1"); ok || err != nil {
				t.Errorf("NotOurs(b1) after its delete: %t, %v", ok, err)
			}
			return nil
		})
	})
}

// A state file of schema 1 migrates to 2: its tickets stay, and the
// not-ours records are kept from then on.
func TestMigrateSchema1To2(t *testing.T) {
	s, path := openTest(t, Options{})
	update(t, s, func(tx *Tx) error { return tx.PutTicket(Ticket{ID: "t1", Ref: "RT#1"}) })
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	rawFile(t, path, func(btx *bolt.Tx) error {
		if err := btx.DeleteBucket([]byte(bucketNotOurs)); err != nil {
			return err
		}
		return putRaw(btx, bucketMeta, metaSchema, "1")
	})
	s, err := Open(t.Context(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Schema() != SchemaVersion {
		t.Errorf("Schema = %d, want %d", s.Schema(), SchemaVersion)
	}
	if _, err := os.Stat(path + ".schema-1.bak"); err != nil {
		t.Errorf("no copy of the schema-1 file: %v", err)
	}
	update(t, s, func(tx *Tx) error { return tx.PutNotOurs(NotOurs{ID: "b1"}) })
	view(t, s, func(tx *Tx) error {
		if tk, ok, err := tx.Ticket("t1"); !ok || err != nil || tk.Ref != "RT#1" {
			t.Errorf("t1 after the migration: %+v, %t, %v", tk, ok, err)
		}
		return nil
	})
}
