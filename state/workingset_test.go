package state

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
)

// readWorkingSet reads, in tx, what a sync cycle reads at its start.
func readWorkingSet(tx *Tx) (string, error) {
	var out []string
	if err := tx.ForEachTicket(func(t Ticket) error { out = append(out, fmt.Sprintf("ticket %+v", t)); return nil }); err != nil {
		return "", err
	}
	for _, key := range []string{"adapter", "empty", "missing", metaSchema} {
		v, ok, err := tx.Meta(key)
		if err != nil {
			return "", err
		}
		out = append(out, fmt.Sprintf("meta %s=%q %t", key, v, ok))
	}
	for _, name := range []string{"changes", "none"} {
		c, err := tx.Cursor(name)
		if err != nil {
			return "", err
		}
		out = append(out, fmt.Sprintf("cursor %s=%q", name, c))
	}
	p, err := tx.PendingJournal()
	if err != nil && !errors.Is(err, ErrCorrupt) {
		return "", err
	}
	out = append(out, fmt.Sprintf("pending error %v", err))
	u, err := tx.UnmarkedJournal()
	if err != nil {
		return "", err
	}
	out = append(out, fmt.Sprintf("pending %+v", p), fmt.Sprintf("unmarked %+v", u))
	return fmt.Sprint(out), nil
}

// ViewWorkingSet reads what View reads, and on PostgreSQL in one round
// trip; a read of anything else fails there instead of seeing another
// snapshot. An empty value is there, unlike a missing one, and an index
// entry that points to no journal entry reads as it does in View.
func TestViewWorkingSet(t *testing.T) {
	eachBackend(t, func(t *testing.T, b testBackend) {
		s, _ := b.openTest(t, Options{})
		seed(t, s)
		update(t, s, func(tx *Tx) error {
			e, err := tx.PutJournal(reply("e2", "t2", "sent"))
			if err != nil {
				return err
			}
			e.State, e.SentAt = Sent, t0
			if _, err = tx.PutJournal(e); err != nil {
				return err
			}
			if err := tx.SetMeta("empty", ""); err != nil {
				return err
			}
			return tx.kv.put(bucketJournalPending, []byte("\xff-dangling"), []byte("e-gone"))
		})
		var want, got string
		view(t, s, func(tx *Tx) (err error) { want, err = readWorkingSet(tx); return err })
		rt0 := s.RoundTrips()
		if err := s.ViewWorkingSet(t.Context(), func(tx *Tx) (err error) { got, err = readWorkingSet(tx); return err }); err != nil {
			t.Fatal(err)
		}
		if b.name == "postgres" {
			if n := s.RoundTrips() - rt0; n != 1 {
				t.Errorf("ViewWorkingSet: %d round trips, want 1", n)
			}
		}
		if got != want {
			t.Errorf("ViewWorkingSet read\n%s\nView read\n%s", got, want)
		}
		err := s.ViewWorkingSet(t.Context(), func(tx *Tx) error {
			_, err := tx.Mirrored("t1")
			return err
		})
		if b.name == "postgres" && !errors.Is(err, errOutsideWorkingSet) {
			t.Errorf("ViewWorkingSet reading the mirrored messages: %v, want %v", err, errOutsideWorkingSet)
		}
		if b.name == "bbolt" && err != nil {
			t.Errorf("ViewWorkingSet reading the mirrored messages on bbolt: %v", err)
		}
	})
}

// MessageIDs reads the mirrored and own message ids of many tickets at
// once, and on PostgreSQL in one round trip; a ticket whose id starts
// another's gets its own only.
func TestMessageIDs(t *testing.T) {
	eachBackend(t, func(t *testing.T, b testBackend) {
		s, _ := b.openTest(t, Options{})
		update(t, s, func(tx *Tx) error {
			for _, id := range []string{"t1", "t10", "t2", "t3"} {
				if err := tx.PutTicket(Ticket{ID: id}); err != nil {
					return err
				}
			}
			for _, m := range [][2]string{{"t1", "m1"}, {"t1", "m3"}, {"t10", "m9"}, {"t3", "m7"}} {
				if err := tx.PutMirrored(m[0], m[1], "h-"+m[1], t0, MessageInfo{}); err != nil {
					return err
				}
			}
			return tx.MarkOwn("t1", "m2", "e1", t0, MessageInfo{})
		})
		rt0 := s.RoundTrips()
		got, err := s.MessageIDs(t.Context(), []string{"t1", "t2", "t3"})
		if err != nil {
			t.Fatal(err)
		}
		if b.name == "postgres" {
			if n := s.RoundTrips() - rt0; n != 1 {
				t.Errorf("MessageIDs: %d round trips, want 1", n)
			}
		}
		for id := range got {
			slices.Sort(got[id])
		}
		want := map[string][]string{"t1": {"m1", "m2", "m3"}, "t3": {"m7"}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("MessageIDs = %v, want %v", got, want)
		}
		if _, err := s.MessageIDs(t.Context(), []string{"a/b"}); !errors.Is(err, ErrInvalid) {
			t.Errorf("MessageIDs of an id with a slash: %v, want ErrInvalid", err)
		}
	})
}

// A value of a working-set view is valid until the view ends (kvTx). On
// PostgreSQL the views share their buffers; a value kept past its view by
// mistake reads as zeros until the next view takes the buffer (none does
// here), and then as that view's bytes.
func TestWorkingSetValueKeptPastItsView(t *testing.T) {
	eachBackend(t, func(t *testing.T, b testBackend) {
		if b.name != "postgres" {
			t.Skip("bbolt's values are its pages'")
		}
		s, _ := b.openTest(t, Options{})
		seed(t, s)
		var kept []byte
		err := s.ViewWorkingSet(t.Context(), func(tx *Tx) (err error) {
			kept, err = tx.kv.get(bucketMeta, []byte("adapter"))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if want := bytes.Repeat([]byte{0}, len("files")); !bytes.Equal(kept, want) {
			t.Errorf("a value kept past its view reads %q, want %q", kept, want)
		}
	})
}
