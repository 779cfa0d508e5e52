package state

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestCorruptTicketIsNamedAndOthersStayReadable(t *testing.T) {
	eachBackend(t, func(t *testing.T, b testBackend) {
		for _, c := range []struct {
			name, val, want string
		}{
			{"garbage", "{broken", "invalid character"},
			{"newer version", `{"v":2,"id":"t2"}`, "record version 2 is newer than 1"},
			{"no version", `{"id":"t2"}`, "record version (v) missing"},
			{"zero version", `{"v":0,"id":"t2"}`, "record version 0 is not positive"},
			{"wrong id", `{"v":1,"id":"t3"}`, `record id "t3" differs from its key`},
			{"wrong type", `{"v":1,"id":"t2","attempts":"many"}`, "cannot unmarshal"},
			{"invalid", `{"v":1,"id":"t2","attempts":-4}`, "attempts -4 is negative"},
			{"not an object", `[1,2]`, "cannot unmarshal array"},
		} {
			t.Run(c.name, func(t *testing.T) {
				s, _ := b.openTest(t, Options{})
				update(t, s, func(tx *Tx) error {
					for _, id := range []string{"t1", "t2", "t3"} {
						if err := tx.PutTicket(Ticket{ID: id, Ref: "ref-" + id}); err != nil {
							return err
						}
					}
					return nil
				})
				rawPut(t, s, bucketTickets, "t2", c.val)

				err := s.View(t.Context(), func(tx *Tx) error { _, _, err := tx.Ticket("t2"); return err })
				var rerr *RecordError
				if !errors.As(err, &rerr) || !errors.Is(err, ErrCorrupt) {
					t.Fatalf("Ticket(t2): err = %v, want a *RecordError matching ErrCorrupt", err)
				}
				if rerr.Bucket != "tickets" || rerr.Key != "t2" || !strings.Contains(err.Error(), `decode record tickets/"t2": `) || !strings.Contains(err.Error(), c.want) {
					t.Errorf("error = %q (bucket %q key %q), want it to name tickets/t2 and say %q", err, rerr.Bucket, rerr.Key, c.want)
				}

				var seen []string
				err = s.View(t.Context(), func(tx *Tx) error {
					if tk, ok, err := tx.Ticket("t1"); err != nil || !ok || tk.Ref != "ref-t1" {
						t.Errorf("Ticket(t1) beside a corrupt record = %+v, %t, %v", tk, ok, err)
					}
					return tx.ForEachTicket(func(tk Ticket) error { seen = append(seen, tk.ID); return nil })
				})
				if !reflect.DeepEqual(seen, []string{"t1", "t3"}) {
					t.Errorf("ForEachTicket visited %v, want t1 and t3", seen)
				}
				if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), `tickets/"t2"`) {
					t.Errorf("ForEachTicket: err = %v, want ErrCorrupt naming t2", err)
				}

				// A put replaces the damaged record; a delete removes it.
				update(t, s, func(tx *Tx) error { return tx.PutTicket(Ticket{ID: "t2", Ref: "fixed"}) })
				view(t, s, func(tx *Tx) error { return tx.ForEachTicket(func(Ticket) error { return nil }) })
				rawPut(t, s, bucketTickets, "t2", c.val)
				update(t, s, func(tx *Tx) error { return tx.DeleteTicket("t2") })
				view(t, s, func(tx *Tx) error { return tx.ForEachTicket(func(Ticket) error { return nil }) })
			})
		}
	})
}

func TestCorruptJournalEntry(t *testing.T) {
	eachBackend(t, func(t *testing.T, b testBackend) {
		s, _ := b.openTest(t, Options{})
		update(t, s, func(tx *Tx) error {
			if err := tx.PutTicket(Ticket{ID: "t1"}); err != nil {
				return err
			}
			for _, id := range []string{"e1", "e2", "e3"} {
				if _, err := tx.PutJournal(reply(id, "t1", "body "+id)); err != nil {
					return err
				}
			}
			return nil
		})
		// A well-formed record whose payload no longer matches its hash.
		var raw string
		_ = s.View(t.Context(), func(tx *Tx) error { v, err := tx.kv.get(bucketJournal, []byte("e2")); raw = string(v); return err })
		rawPut(t, s, bucketJournal, "e2", strings.Replace(raw, "body e2", "body XX", 1))

		err := s.View(t.Context(), func(tx *Tx) error { _, _, err := tx.JournalEntry("e2"); return err })
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), `journal/"e2"`) || !strings.Contains(err.Error(), "does not match the payload") {
			t.Errorf("JournalEntry(e2): err = %v, want ErrCorrupt naming journal/e2 and the hash", err)
		}
		for name, list := range map[string]func(tx *Tx) ([]Entry, error){
			"PendingJournal":   (*Tx).PendingJournal,
			"JournalForTicket": func(tx *Tx) ([]Entry, error) { return tx.JournalForTicket("t1") },
		} {
			var got []Entry
			err := s.View(t.Context(), func(tx *Tx) (err error) { got, err = list(tx); return err })
			if ids := eventIDs(got); !reflect.DeepEqual(ids, []string{"e1", "e3"}) {
				t.Errorf("%s beside a corrupt entry = %v, want e1 and e3", name, ids)
			}
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), `journal/"e2"`) {
				t.Errorf("%s: err = %v, want ErrCorrupt naming e2", name, err)
			}
		}
		// A put cannot overwrite it silently: its old index keys are unknown.
		err = s.Update(t.Context(), func(tx *Tx) error { _, err := tx.PutJournal(reply("e2", "t1", "body e2")); return err })
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("PutJournal over a corrupt entry: err = %v, want ErrCorrupt", err)
		}
		// Pruning skips it and says so.
		err = s.Update(t.Context(), func(tx *Tx) error { _, err := tx.PruneJournal(t0); return err })
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("PruneJournal: err = %v, want ErrCorrupt", err)
		}
		// DeleteJournal removes it with its index keys, and the lists are clean.
		rawPut(t, s, bucketJournal, "e2", "garbage")
		update(t, s, func(tx *Tx) error { return tx.DeleteJournal("e2") })
		view(t, s, func(tx *Tx) error {
			p, err := tx.PendingJournal()
			if ids := eventIDs(p); err != nil || !reflect.DeepEqual(ids, []string{"e1", "e3"}) {
				t.Errorf("PendingJournal after DeleteJournal = %v, %v", ids, err)
			}
			a, err := tx.JournalForTicket("t1")
			if ids := eventIDs(a); err != nil || !reflect.DeepEqual(ids, []string{"e1", "e3"}) {
				t.Errorf("JournalForTicket after DeleteJournal = %v, %v", ids, err)
			}
			return nil
		})
		// An index pointing nowhere is reported too.
		rawPut(t, s, bucketJournalPending, string(seqKey(99)), "ghost")
		err = s.View(t.Context(), func(tx *Tx) error { _, err := tx.PendingJournal(); return err })
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), `journal_pending/"0000000000000063"`) || !strings.Contains(err.Error(), `"ghost", which does not exist`) {
			t.Errorf("dangling index: err = %v", err)
		}
	})
}

func TestCorruptOtherRecords(t *testing.T) {
	eachBackend(t, func(t *testing.T, b testBackend) {
		s, _ := b.openTest(t, Options{})
		seed(t, s)
		rawPut(t, s, bucketMirrored, "t1/m1", "nope")
		rawPut(t, s, bucketOwn, "t1/m2", `{"v":7}`)
		rawPut(t, s, bucketCursors, "changes", `{"cursor":"x"}`)
		rawPut(t, s, bucketCycles, cycleLast, `{"v":1,"start":"yesterday"}`)
		rawPut(t, s, bucketMeta, metaCreated, "yesterday")
		for _, c := range []struct {
			fn   func(tx *Tx) error
			want string
		}{
			{func(tx *Tx) error { _, err := tx.Mirrored("t1"); return err }, `mirrored/"t1/m1"`},
			{func(tx *Tx) error { _, err := tx.OwnMessages("t1"); return err }, `own/"t1/m2": record version 7 is newer`},
			{func(tx *Tx) error { _, err := tx.Cursor("changes"); return err }, `cursors/"changes": record version (v) missing`},
			{func(tx *Tx) error { _, err := tx.Cursors(); return err }, `cursors/"changes"`},
			{func(tx *Tx) error { _, _, err := tx.LastCycle(); return err }, `cycles/"last"`},
			{func(tx *Tx) error { _, err := tx.CreatedAt(); return err }, `meta/"created_at"`},
		} {
			err := s.View(t.Context(), c.fn)
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want ErrCorrupt containing %q", err, c.want)
			}
		}
		// Lookups that do not decode still answer, and t2's messages are fine.
		view(t, s, func(tx *Tx) error {
			if ok, err := tx.IsMirrored("t1", "m1"); !ok || err != nil {
				t.Errorf("IsMirrored over a corrupt record = %t, %v", ok, err)
			}
			if m, err := tx.Mirrored("t2"); err != nil || len(m) != 1 {
				t.Errorf("Mirrored(t2) = %v, %v", m, err)
			}
			if c, ok, err := tx.LastSuccess(); err != nil || !ok || c.Outcome != "ok" {
				t.Errorf("LastSuccess = %+v, %t, %v", c, ok, err)
			}
			return nil
		})
	})
}
