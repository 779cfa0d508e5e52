package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/internal/testutil"
)

// reply returns a pending reply entry.
func reply(eventID, ticketID, body string) Entry {
	return Entry{
		EventID:        eventID,
		TicketID:       ticketID,
		Ref:            "ref-" + ticketID,
		IdempotencyKey: "key-" + eventID,
		Kind:           KindReply,
		Payload:        Payload{Body: body, AuthorName: "Ana", Visible: true},
	}
}

// seed stores a small but complete state: two tickets with messages, a
// journal entry, a cursor, a meta key and a cycle.
func seed(t *testing.T, s *Store) {
	t.Helper()
	update(t, s, func(tx *Tx) error {
		for _, id := range []string{"t1", "t2"} {
			if err := tx.PutTicket(Ticket{ID: id, Ref: "ref-" + id, UpstreamStatus: "new"}); err != nil {
				return err
			}
			if err := tx.PutMirrored(id, "m1", "h1", t0, MessageInfo{}); err != nil {
				return err
			}
		}
		if err := tx.MarkOwn("t1", "m2", "e0", t0, MessageInfo{}); err != nil {
			return err
		}
		if _, err := tx.PutJournal(reply("e1", "t1", "hi")); err != nil {
			return err
		}
		if err := tx.SetCursor("changes", "10"); err != nil {
			return err
		}
		if err := tx.SetMeta("adapter", "files"); err != nil {
			return err
		}
		return tx.PutCycle(Cycle{Start: t0, End: t0.Add(time.Second), Outcome: "ok", Success: true, Report: json.RawMessage(`{"tickets":2}`)})
	})
}

// dump renders every bucket and key of the state, for before/after checks.
func dump(t *testing.T, s *Store) string {
	t.Helper()
	var b strings.Builder
	err := s.be.view(t.Context(), func(kv kvTx) error {
		for _, name := range allBuckets {
			err := kv.scan(name, nil, func(k, v []byte) error {
				fmt.Fprintf(&b, "%s/%s=%s\n", name, k, v)
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestTicketRoundTrip(t *testing.T) {
	eachBackend(t, func(t *testing.T, b testBackend) {
		clk := testutil.NewClock(t0)
		s, _ := b.openTest(t, Options{Now: clk.Now})
		paris := time.FixedZone("CET", 3600)
		at := func(min int) time.Time { return time.Date(2026, 2, 1, 10, min, 5, 123456789, paris) }
		in := Ticket{
			ID:                "7f3c1f7e-9a51-4d7c-8f0e-2b6a1c9d0e11",
			Department:        "housekeeping",
			Ref:               "RT#1234",
			UpstreamStatus:    "in_progress",
			UpstreamUpdatedAt: at(1),
			HelpdeskStatus:    "assigned",
			HelpdeskStatusAt:  at(2),
			NextDue:           at(3),
			DueReason:         "quiet",
			QuietStreak:       4,
			LastActivity:      at(4),
			ClosedAt:          at(5),
			Retired:           true,
			LastError:         "append: HTTP 502",
			Attempts:          3,
			CreatedAt:         at(6),
		}
		update(t, s, func(tx *Tx) error { return tx.PutTicket(in) })

		want := in
		for _, p := range []*time.Time{&want.UpstreamUpdatedAt, &want.HelpdeskStatusAt, &want.NextDue, &want.LastActivity, &want.ClosedAt, &want.CreatedAt} {
			*p = p.UTC()
		}
		want.UpdatedAt = t0
		var got Ticket
		var ok bool
		view(t, s, func(tx *Tx) (err error) { got, ok, err = tx.Ticket(in.ID); return err })
		want.rev = got.rev // the read's (see TestTicketRevision)
		if !ok || !reflect.DeepEqual(got, want) {
			t.Fatalf("Ticket:\n got %+v\nwant %+v", got, want)
		}

		// A put without CreatedAt keeps the stored one; UpdatedAt follows the clock.
		clk.Set(t0.Add(time.Hour))
		in2 := got
		in2.CreatedAt, in2.Retired, in2.Attempts = time.Time{}, false, 0
		update(t, s, func(tx *Tx) error { return tx.PutTicket(in2) })
		view(t, s, func(tx *Tx) (err error) { got, ok, err = tx.Ticket(in.ID); return err })
		if !got.CreatedAt.Equal(want.CreatedAt) || !got.UpdatedAt.Equal(clk.Now()) || got.Retired || got.Attempts != 0 {
			t.Errorf("second put: got %+v", got)
		}

		// A new ticket without CreatedAt gets now; an unknown id reads as absent.
		update(t, s, func(tx *Tx) error { return tx.PutTicket(Ticket{ID: "t2"}) })
		view(t, s, func(tx *Tx) (err error) { got, ok, err = tx.Ticket("t2"); return err })
		if !ok || !got.CreatedAt.Equal(clk.Now()) {
			t.Errorf("new ticket: got %+v ok=%t", got, ok)
		}
		view(t, s, func(tx *Tx) (err error) { got, ok, err = tx.Ticket("nope"); return err })
		if ok {
			t.Errorf("Ticket(nope) found %+v", got)
		}

		var ids []string
		view(t, s, func(tx *Tx) error {
			return tx.ForEachTicket(func(t Ticket) error { ids = append(ids, t.ID); return nil })
		})
		if want := []string{"7f3c1f7e-9a51-4d7c-8f0e-2b6a1c9d0e11", "t2"}; !reflect.DeepEqual(ids, want) {
			t.Errorf("ForEachTicket ids = %v, want %v", ids, want)
		}
		stop := errors.New("stop")
		err := s.View(t.Context(), func(tx *Tx) error {
			return tx.ForEachTicket(func(Ticket) error { return stop })
		})
		if !errors.Is(err, stop) {
			t.Errorf("ForEachTicket: err = %v, want fn's error", err)
		}
	})
}

func TestTicketValidation(t *testing.T) {
	eachBackend(t, func(t *testing.T, b testBackend) {
		s, _ := b.openTest(t, Options{})
		long := strings.Repeat("x", maxIDLen+1)
		cases := []struct {
			t    Ticket
			want string
		}{
			{Ticket{}, `put ticket "": invalid record: id is empty`},
			{Ticket{ID: "a/b"}, `id "a/b" contains a /`},
			{Ticket{ID: long}, "id is 201 bytes long (at most 200)"},
			{Ticket{ID: "a\nb"}, "contains a control character"},
			{Ticket{ID: "a\xffb"}, "not valid UTF-8"},
			{Ticket{ID: "t", Attempts: -1}, `put ticket "t": invalid record: attempts -1 is negative`},
			{Ticket{ID: "t", QuietStreak: -2}, "quiet_streak -2 is negative"},
		}
		for _, c := range cases {
			err := s.Update(t.Context(), func(tx *Tx) error { return tx.PutTicket(c.t) })
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("PutTicket(%+v): err = %v, want ErrInvalid containing %q", c.t, err, c.want)
			}
		}
		if st, err := s.Stats(t.Context()); err != nil || st.Tickets != 0 {
			t.Errorf("after refused puts: Stats = %+v, %v", st, err)
		}
	})
}

func TestMessagesRoundTrip(t *testing.T) {
	eachBackend(t, func(t *testing.T, b testBackend) {
		s, _ := b.openTest(t, Options{})
		later := t0.Add(time.Minute).In(time.FixedZone("X", -7200))
		update(t, s, func(tx *Tx) error {
			// "t1" is a prefix of "t10": their messages must not mix.
			for _, id := range []string{"t1", "t10", "t2"} {
				if err := tx.PutTicket(Ticket{ID: id}); err != nil {
					return err
				}
			}
			for _, m := range []struct{ tk, msg, hd string }{
				{"t1", "m1", "c1"}, {"t1", "m2", "c2"}, {"t10", "m1", "c10"}, {"t2", "m3", ""},
			} {
				if err := tx.PutMirrored(m.tk, m.msg, m.hd, t0, MessageInfo{}); err != nil {
					return err
				}
			}
			if err := tx.PutMirrored("t1", "m2", "c2b", later, MessageInfo{}); err != nil { // replaces
				return err
			}
			if err := tx.MarkOwn("t1", "m9", "ev9", later, MessageInfo{}); err != nil {
				return err
			}
			return tx.MarkOwn("t10", "m8", "ev8", t0, MessageInfo{})
		})

		view(t, s, func(tx *Tx) error {
			got, err := tx.Mirrored("t1")
			if err != nil {
				return err
			}
			want := map[string]MirroredMessage{"m1": {HelpdeskID: "c1", At: t0}, "m2": {HelpdeskID: "c2b", At: later.UTC()}}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Mirrored(t1) = %+v, want %+v", got, want)
			}
			if got, _ := tx.Mirrored("t3"); len(got) != 0 || got == nil {
				t.Errorf("Mirrored(t3) = %#v, want an empty map", got)
			}
			own, err := tx.OwnMessages("t1")
			if err != nil {
				return err
			}
			if want := map[string]OwnMessage{"m9": {EventID: "ev9", At: later.UTC()}}; !reflect.DeepEqual(own, want) {
				t.Errorf("OwnMessages(t1) = %+v, want %+v", own, want)
			}
			for _, c := range []struct {
				tk, msg                string
				mirrored, isOwn, known bool
			}{
				{"t1", "m1", true, false, true},
				{"t1", "m9", false, true, true},
				{"t1", "m3", false, false, false},
				{"t10", "m1", true, false, true},
				{"t10", "m2", false, false, false},
				{"t1", "m8", false, false, false},
				{"t2", "m3", true, false, true},
			} {
				m, err1 := tx.IsMirrored(c.tk, c.msg)
				o, err2 := tx.IsOwn(c.tk, c.msg)
				k, err3 := tx.Known(c.tk, c.msg)
				if err := errors.Join(err1, err2, err3); err != nil {
					return err
				}
				if m != c.mirrored || o != c.isOwn || k != c.known {
					t.Errorf("%s/%s: mirrored, own, known = %t, %t, %t; want %t, %t, %t", c.tk, c.msg, m, o, k, c.mirrored, c.isOwn, c.known)
				}
			}
			return nil
		})

		// Messages need their ticket, and ids are checked.
		for _, f := range []func(tx *Tx) error{
			func(tx *Tx) error { return tx.PutMirrored("t9", "m1", "c", t0, MessageInfo{}) },
			func(tx *Tx) error { return tx.MarkOwn("t9", "m1", "e", t0, MessageInfo{}) },
		} {
			err := s.Update(t.Context(), f)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `ticket "t9" is not in state`) {
				t.Errorf("message of an unknown ticket: err = %v", err)
			}
		}
		err := s.Update(t.Context(), func(tx *Tx) error { return tx.PutMirrored("t1", "", "c", t0, MessageInfo{}) })
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "message id is empty") {
			t.Errorf("empty message id: err = %v", err)
		}
		err = s.View(t.Context(), func(tx *Tx) error {
			_, err := tx.IsMirrored("a/b", "m")
			return err
		})
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("IsMirrored(a/b): err = %v, want ErrInvalid", err)
		}

		// Deleting t1 leaves t10 alone; DeleteMessages keeps the ticket.
		update(t, s, func(tx *Tx) error { return tx.DeleteTicket("t1") })
		update(t, s, func(tx *Tx) error { return tx.DeleteMessages("t2") })
		view(t, s, func(tx *Tx) error {
			if _, ok, _ := tx.Ticket("t1"); ok {
				t.Errorf("t1 still there after DeleteTicket")
			}
			for _, c := range []struct {
				tk   string
				want int
			}{{"t1", 0}, {"t10", 1}, {"t2", 0}} {
				m, _ := tx.Mirrored(c.tk)
				if len(m) != c.want {
					t.Errorf("Mirrored(%s) after deletes = %v, want %d", c.tk, m, c.want)
				}
			}
			if o, _ := tx.OwnMessages("t1"); len(o) != 0 {
				t.Errorf("OwnMessages(t1) after DeleteTicket = %v", o)
			}
			if o, _ := tx.OwnMessages("t10"); len(o) != 1 {
				t.Errorf("OwnMessages(t10) = %v, want m8", o)
			}
			if _, ok, _ := tx.Ticket("t2"); !ok {
				t.Errorf("DeleteMessages removed the ticket")
			}
			return nil
		})
		update(t, s, func(tx *Tx) error { return tx.DeleteTicket("never-there") })
	})
}

func TestCursorsMetaCycles(t *testing.T) {
	eachBackend(t, func(t *testing.T, b testBackend) {
		s, _ := b.openTest(t, Options{})
		view(t, s, func(tx *Tx) error {
			c, err := tx.Cursor("changes")
			if err != nil || c != "" {
				t.Errorf("Cursor before any: %q, %v", c, err)
			}
			if _, ok, err := tx.LastCycle(); ok || err != nil {
				t.Errorf("LastCycle before any: ok=%t err=%v", ok, err)
			}
			if v, ok, err := tx.Meta(metaSchema); !ok || err != nil || v != fmt.Sprint(s.Schema()) {
				t.Errorf("Meta(schema_version) = %q, %t, %v", v, ok, err)
			}
			return nil
		})
		update(t, s, func(tx *Tx) error {
			if err := tx.SetCursor("changes", `{"since":"2026-03-01T12:00:00Z","id":17}`); err != nil {
				return err
			}
			if err := tx.SetCursor("other", ""); err != nil {
				return err
			}
			if err := tx.SetMeta("adapter", "rt"); err != nil {
				return err
			}
			if err := tx.SetMeta("gone", "x"); err != nil {
				return err
			}
			if err := tx.DeleteMeta("gone"); err != nil {
				return err
			}
			ok := Cycle{Start: t0, End: t0.Add(2 * time.Second), Outcome: "ok", Success: true, Report: json.RawMessage("{\n  \"tickets\": 3\n}")}
			if err := tx.PutCycle(ok); err != nil {
				return err
			}
			return tx.PutCycle(Cycle{Start: t0.Add(time.Minute), End: t0.Add(time.Minute + time.Second), Outcome: "partial"})
		})
		view(t, s, func(tx *Tx) error {
			if c, _ := tx.Cursor("changes"); c != `{"since":"2026-03-01T12:00:00Z","id":17}` {
				t.Errorf("Cursor(changes) = %q", c)
			}
			all, err := tx.Cursors()
			if err != nil || !reflect.DeepEqual(all, map[string]string{"changes": `{"since":"2026-03-01T12:00:00Z","id":17}`, "other": ""}) {
				t.Errorf("Cursors = %v, %v", all, err)
			}
			if v, ok, _ := tx.Meta("adapter"); !ok || v != "rt" {
				t.Errorf("Meta(adapter) = %q, %t", v, ok)
			}
			if _, ok, _ := tx.Meta("gone"); ok {
				t.Errorf("Meta(gone) still there")
			}
			last, ok, err := tx.LastCycle()
			if err != nil || !ok || last.Outcome != "partial" || last.Success || !last.Start.Equal(t0.Add(time.Minute)) {
				t.Errorf("LastCycle = %+v, %t, %v", last, ok, err)
			}
			good, ok, err := tx.LastSuccess()
			if err != nil || !ok || good.Outcome != "ok" || string(good.Report) != `{"tickets":3}` || !good.End.Equal(t0.Add(2*time.Second)) {
				t.Errorf("LastSuccess = %+v (report %s), %t, %v", good, good.Report, ok, err)
			}
			return nil
		})

		for _, c := range []struct {
			name string
			fn   func(tx *Tx) error
			want string
		}{
			{"reserved schema", func(tx *Tx) error { return tx.SetMeta(metaSchema, "9") }, `meta key "schema_version" is reserved`},
			{"reserved created", func(tx *Tx) error { return tx.DeleteMeta(metaCreated) }, `reserved`},
			{"empty meta key", func(tx *Tx) error { return tx.SetMeta("", "x") }, "meta key is empty"},
			{"empty cursor name", func(tx *Tx) error { return tx.SetCursor("", "x") }, "cursor name is empty"},
			{"bad report", func(tx *Tx) error { return tx.PutCycle(Cycle{Report: json.RawMessage("{")}) }, "report is not valid JSON"},
			{"end before start", func(tx *Tx) error { return tx.PutCycle(Cycle{Start: t0, End: t0.Add(-time.Second)}) }, "is before start"},
		} {
			err := s.Update(t.Context(), c.fn)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: err = %v, want ErrInvalid containing %q", c.name, err, c.want)
			}
		}
	})
}

// Values handed out stay intact after their transaction ended and the file
// was remapped: none aliases the mmap.
func TestValuesAreCopies(t *testing.T) {
	eachBackend(t, func(t *testing.T, b testBackend) {
		s, _ := b.openTest(t, Options{})
		seed(t, s)
		var (
			tk     Ticket
			mirr   map[string]MirroredMessage
			own    map[string]OwnMessage
			e      Entry
			cyc    Cycle
			cursor string
			meta   string
		)
		view(t, s, func(tx *Tx) (err error) {
			tk, _, _ = tx.Ticket("t1")
			mirr, _ = tx.Mirrored("t1")
			own, _ = tx.OwnMessages("t1")
			e, _, _ = tx.JournalEntry("e1")
			cyc, _, _ = tx.LastCycle()
			cursor, _ = tx.Cursor("changes")
			meta, _, err = tx.Meta("adapter")
			return err
		})
		// Rewrite those keys and grow the file well past its first mmap.
		update(t, s, func(tx *Tx) error {
			big := strings.Repeat("z", 4096)
			for i := range 1000 {
				if err := tx.PutTicket(Ticket{ID: fmt.Sprintf("x%04d", i), LastError: big}); err != nil {
					return err
				}
			}
			if err := tx.PutTicket(Ticket{ID: "t1", Ref: "changed"}); err != nil {
				return err
			}
			if err := tx.SetMeta("adapter", "ZZZZZ"); err != nil {
				return err
			}
			if err := tx.SetCursor("changes", "ZZ"); err != nil {
				return err
			}
			return tx.PutCycle(Cycle{Outcome: "ZZ", Report: json.RawMessage(`{"ZZZZZZZZZZZ":1}`)})
		})
		if tk.Ref != "ref-t1" || mirr["m1"].HelpdeskID != "h1" || own["m2"].EventID != "e0" ||
			e.Payload.Body != "hi" || string(cyc.Report) != `{"tickets":2}` || cursor != "10" || meta != "files" {
			t.Errorf("values changed after their transaction: %+v %+v %+v %+v %s %q %q", tk, mirr, own, e, cyc.Report, cursor, meta)
		}
	})
}

func TestStats(t *testing.T) {
	eachBackend(t, func(t *testing.T, b testBackend) {
		s, _ := b.openTest(t, Options{})
		seed(t, s)
		update(t, s, func(tx *Tx) error {
			if err := tx.PutTicket(Ticket{ID: "t3", UpstreamStatus: "done", Retired: true}); err != nil {
				return err
			}
			if err := tx.PutTicket(Ticket{ID: "t4", UpstreamStatus: "done", LastError: "boom", Attempts: 2}); err != nil {
				return err
			}
			if err := tx.PutTicket(Ticket{ID: "t5"}); err != nil {
				return err
			}
			e, err := tx.PutJournal(reply("e2", "t1", "sent one"))
			if err != nil {
				return err
			}
			e.State, e.SentAt = Sent, t0
			if _, err := tx.PutJournal(e); err != nil {
				return err
			}
			f := reply("e3", "t2", "refused")
			f.State = Failed
			_, err = tx.PutJournal(f)
			return err
		})
		rawPut(t, s, bucketTickets, "t6", "{broken")
		st, err := s.Stats(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if (st.FileSize <= 0) != (b.name == "postgres") {
			t.Errorf("FileSize = %d on %s (want > 0 on bbolt, 0 on PostgreSQL: there is no file)", st.FileSize, b.name)
		}
		if (st.DataBytes <= 0) != (b.name == "bbolt") {
			t.Errorf("DataBytes = %d on %s (want 0 on bbolt, > 0 on PostgreSQL)", st.DataBytes, b.name)
		}
		st.FileSize, st.DataBytes = 0, 0
		want := Stats{
			Backend:  b.name,
			Schema:   s.Schema(),
			Tickets:  6,
			ByStatus: map[string]int{"new": 2, "done": 2, "": 1},
			Retired:  1, WithErrors: 1, Corrupt: 1,
			Mirrored: 2, Own: 1,
			JournalPending: 1, JournalSent: 1, JournalFailed: 1, JournalUnmarked: 1,
			Cursors: 1,
		}
		if !reflect.DeepEqual(st, want) {
			t.Errorf("Stats:\n got %+v\nwant %+v", st, want)
		}
	})
}

func TestLeadingVersion(t *testing.T) {
	for _, c := range []struct {
		in string
		v  int
		ok bool
	}{
		{`{"v":1,"id":"t"}`, 1, true},
		{`{"v":12}`, 12, true},
		{`{"v":}`, 0, false},
		{`{"v":1 ,"id":"t"}`, 0, false},
		{`{"v":1234567,`, 0, false},
		{`{"v":-1,`, 0, false},
		{`{"v":1`, 0, false},
		{` {"v":1,`, 0, false},
		{`{"id":"t","v":1}`, 0, false},
	} {
		v, ok := leadingVersion([]byte(c.in))
		if v != c.v || ok != c.ok {
			t.Errorf("leadingVersion(%s) = %d, %t; want %d, %t", c.in, v, ok, c.v, c.ok)
		}
	}
	// A record in another form still decodes through the full parse.
	tk, err := decodeTicket("t", []byte(` { "id": "t", "v": 1 }`))
	if err != nil || tk.ID != "t" {
		t.Errorf("decodeTicket of a hand-written record = %+v, %v", tk, err)
	}
}

// Inside Update, fn may rewrite and delete tickets during the walk.
func TestForEachTicketMayWrite(t *testing.T) {
	eachBackend(t, func(t *testing.T, b testBackend) {
		s, _ := b.openTest(t, Options{})
		const n = 300 // several pages' worth, so writes split and merge pages
		update(t, s, func(tx *Tx) error {
			for i := range n {
				if err := tx.PutTicket(Ticket{ID: fmt.Sprintf("t%04d", i), DueReason: strings.Repeat("x", 100)}); err != nil {
					return err
				}
			}
			return nil
		})
		visits := map[string]int{}
		update(t, s, func(tx *Tx) error {
			return tx.ForEachTicket(func(tk Ticket) error {
				visits[tk.ID]++
				if strings.HasSuffix(tk.ID, "0") {
					return tx.DeleteTicket(tk.ID)
				}
				tk.QuietStreak++
				tk.LastError = strings.Repeat("e", 500) // grow each record
				if err := tx.PutTicket(tk); err != nil {
					return err
				}
				return tx.PutTicket(Ticket{ID: tk.ID + "-new"}) // insert beside it
			})
		})
		if len(visits) != n {
			t.Errorf("visited %d tickets, want %d", len(visits), n)
		}
		for id, c := range visits {
			if c != 1 || strings.HasSuffix(id, "-new") {
				t.Errorf("ticket %s visited %d times", id, c)
			}
		}
		st, err := s.Stats(t.Context())
		if err != nil || st.Tickets != 2*(n-n/10) {
			t.Errorf("after the walk: %d tickets, %v; want %d", st.Tickets, err, 2*(n-n/10))
		}
	})
}

// TestTicketRevision: a ticket read from state carries its record's
// revision: the same for the same stored bytes (a View, an Update, the
// batch lookup, a scan), a new one after a put, zero for a ticket not
// read from state.
func TestTicketRevision(t *testing.T) {
	eachBackend(t, func(t *testing.T, b testBackend) {
		clk := testutil.NewClock(t0)
		s, _ := b.openTest(t, Options{Now: clk.Now})
		in := Ticket{ID: "7f3c1f7e-9a51-4d7c-8f0e-2b6a1c9d0e11", Department: "housekeeping"}
		if in.Revision() != 0 {
			t.Fatalf("a ticket made in memory has revision %d, want 0", in.Revision())
		}
		update(t, s, func(tx *Tx) error { return tx.PutTicket(in) })
		revs := func() (one, many, scan uint64) {
			t.Helper()
			view(t, s, func(tx *Tx) error {
				got, _, err := tx.Ticket(in.ID)
				one = got.Revision()
				if err != nil {
					return err
				}
				m, err := tx.Tickets([]string{in.ID, "absent"})
				if _, ok := m["absent"]; ok || len(m) != 1 {
					t.Errorf("Tickets of one stored id and one absent: %v, want the stored one only", m)
				}
				many = m[in.ID].Revision()
				if err != nil {
					return err
				}
				return tx.ForEachTicket(func(t Ticket) error { scan = t.Revision(); return nil })
			})
			return one, many, scan
		}
		one, many, scan := revs()
		if one == 0 || one != many || one != scan {
			t.Fatalf("revisions of one record: Ticket %d, Tickets %d, ForEachTicket %d; want equal and not zero", one, many, scan)
		}
		if again, _, _ := revs(); again != one {
			t.Errorf("a second read gave revision %d, want %d", again, one)
		}
		clk.Set(t0.Add(time.Second))
		update(t, s, func(tx *Tx) error {
			got, _, err := tx.Ticket(in.ID)
			if err != nil {
				return err
			}
			got.QuietStreak++
			return tx.PutTicket(got)
		})
		if after, _, _ := revs(); after == one || after == 0 {
			t.Errorf("after a put the revision is %d, want a new one (was %d)", after, one)
		}
	})
}

// TestTicketSame: Same compares times as instants, whatever their
// location, and leaves the revision out.
func TestTicketSame(t *testing.T) {
	at := time.Date(2026, 2, 1, 10, 0, 0, 5, time.UTC)
	a := Ticket{ID: "t1", NextDue: at, UpstreamUpdatedAt: at, rev: 7}
	b := a
	b.NextDue, b.UpstreamUpdatedAt, b.rev = at.In(time.FixedZone("CET", 3600)), at.Local(), 9
	if a == b || !a.Same(b) {
		t.Errorf("the same instants in other locations: == %v, Same %v; want false, true", a == b, a.Same(b))
	}
	b.NextDue = at.Add(time.Nanosecond)
	if a.Same(b) {
		t.Error("Same holds for a NextDue a nanosecond later")
	}
}
