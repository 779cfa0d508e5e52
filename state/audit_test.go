package state

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// TestConformanceAudit: on both backends, a request's trail reads in the
// order it was appended, also for entries of one time appended by
// several transactions; it is the request's own, survives a reopen, and
// costs no commit of its own.
func TestConformanceAudit(t *testing.T) {
	eachBackend(t, func(t *testing.T, b testBackend) {
		s, loc := b.openTest(t, Options{})
		ctx := t.Context()
		a := func(ticket, kind string) Audit {
			return Audit{TicketID: ticket, At: t0, Direction: AuditToHelpdesk, Kind: kind, Outcome: AuditOK, Cause: AuditListChange}
		}
		commits := s.Commits()
		update(t, s, func(tx *Tx) error {
			for _, k := range []string{"ticket", "message", "status"} {
				if err := tx.AppendAudit(a("t1", k)); err != nil {
					return err
				}
			}
			return tx.AppendAudit(a("t2", "ticket"))
		})
		update(t, s, func(tx *Tx) error { return tx.AppendAudit(a("t1", "fields")) })
		if got := s.Commits() - commits; got != 2 {
			t.Errorf("two Updates made %d commits", got)
		}
		_ = s.Close()
		s = openAt(t, loc, Options{})
		got, err := s.AuditTrail(ctx, "t1")
		if err != nil {
			t.Fatal(err)
		}
		var kinds []string
		for _, g := range got {
			kinds = append(kinds, g.Kind)
			if !g.At.Equal(t0) || g.TicketID != "t1" || g.Cause != AuditListChange {
				t.Errorf("entry %+v", g)
			}
		}
		if strings.Join(kinds, ",") != "ticket,message,status,fields" {
			t.Errorf("t1's trail: %v, want ticket,message,status,fields in that order", kinds)
		}
		if got, err := s.AuditTrail(ctx, "t2"); err != nil || len(got) != 1 {
			t.Errorf("t2's trail: %v, %v", got, err)
		}
		if got, err := s.AuditTrail(ctx, "t"); err != nil || len(got) != 0 {
			t.Errorf("the trail of a prefix of ids: %v, %v; want none", got, err)
		}
	})
}

// TestAuditRefusesMalformed: an entry without what the trail needs is
// refused with ErrInvalid, and an operator's command must name the
// operator.
func TestAuditRefusesMalformed(t *testing.T) {
	s, _ := openTest(t, Options{})
	ok := Audit{TicketID: "t1", At: t0, Kind: "retry", Outcome: AuditOK, Cause: AuditOperator, Operator: "ana"}
	for name, mod := range map[string]func(*Audit){
		"no ticket":   func(a *Audit) { a.TicketID = "" },
		"slash":       func(a *Audit) { a.TicketID = "a/b" },
		"no kind":     func(a *Audit) { a.Kind = "" },
		"no outcome":  func(a *Audit) { a.Outcome = "" },
		"no cause":    func(a *Audit) { a.Cause = "" },
		"no operator": func(a *Audit) { a.Operator = "" },
	} {
		a := ok
		mod(&a)
		err := s.Update(t.Context(), func(tx *Tx) error { return tx.AppendAudit(a) })
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	update(t, s, func(tx *Tx) error { return tx.AppendAudit(ok) })
}

// TestAuditDetailIsClipped: a long error is kept cut, whole runes only.
func TestAuditDetailIsClipped(t *testing.T) {
	s, _ := openTest(t, Options{})
	long := strings.Repeat("é", MaxAuditDetail)
	update(t, s, func(tx *Tx) error {
		return tx.AppendAudit(Audit{TicketID: "t1", At: t0, Kind: "reply", Outcome: AuditRetrying, Cause: AuditHelpdeskChange, Detail: long})
	})
	got, err := s.AuditTrail(t.Context(), "t1")
	if err != nil || len(got) != 1 {
		t.Fatal(got, err)
	}
	if d := got[0].Detail; len(d) > MaxAuditDetail || !strings.HasSuffix(d, "…") || !strings.HasPrefix(d, "éé") || strings.ContainsRune(d, '\uFFFD') {
		t.Errorf("detail %q (%d bytes)", d, len(d))
	}
}

// TestConformancePruneAudit: on both backends, pruning deletes the days
// before the cutoff's, of every request, and keeps the rest; a prune the
// next day deletes one day more, by the day it remembered, and a daemon
// stopped for long catches up a bounded number of days at a time.
func TestConformancePruneAudit(t *testing.T) {
	eachBackend(t, func(t *testing.T, b testBackend) {
		s, _ := b.openTest(t, Options{})
		ctx := t.Context()
		day := func(n int) time.Time { return t0.AddDate(0, 0, n) }
		add := func(ticket string, at time.Time) {
			update(t, s, func(tx *Tx) error {
				return tx.AppendAudit(Audit{TicketID: ticket, At: at, Kind: "message", Outcome: AuditOK, Cause: AuditFullRead})
			})
		}
		add("t1", day(0))
		add("t2", day(0).Add(time.Hour))
		add("t1", day(1))
		add("t1", day(2))
		add("t2", day(40))
		prune := func(before time.Time) int {
			t.Helper()
			var n int
			update(t, s, func(tx *Tx) error {
				var err error
				n, err = tx.PruneAudit(before)
				return err
			})
			return n
		}
		count := func(ticket string) int {
			t.Helper()
			got, err := s.AuditTrail(ctx, ticket)
			if err != nil {
				t.Fatal(err)
			}
			return len(got)
		}
		// Day 1, 18:00: day 0 is past.
		if n := prune(day(1).Add(6 * time.Hour)); n != 1 {
			t.Errorf("first prune deleted %d days, want 1", n)
		}
		if c1, c2 := count("t1"), count("t2"); c1 != 2 || c2 != 1 {
			t.Errorf("after the first prune: t1 %d, t2 %d entries; want 2 and 1", c1, c2)
		}
		if n := prune(day(1).Add(7 * time.Hour)); n != 0 {
			t.Errorf("a prune on the same day deleted %d days", n)
		}
		// Day 2: day 1 is past.
		if n := prune(day(2)); n != 1 {
			t.Errorf("the next day's prune deleted %d days, want 1", n)
		}
		if c := count("t1"); c != 1 {
			t.Errorf("t1 after the second prune: %d entries, want 1", c)
		}
		// Stopped for long: the days up to day 40 go, AuditPruneDays at
		// a time, and day 40's entry stays.
		if n := prune(day(40)); n != AuditPruneDays {
			t.Errorf("a long gap: %d days, want %d", n, AuditPruneDays)
		}
		if n := prune(day(40)); n != 40-2-AuditPruneDays {
			t.Errorf("catching up: %d days, want %d", n, 40-2-AuditPruneDays)
		}
		if c1, c2 := count("t1"), count("t2"); c1 != 0 || c2 != 1 {
			t.Errorf("after catching up: t1 %d, t2 %d entries; want 0 and 1", c1, c2)
		}
		view(t, s, func(tx *Tx) error {
			var keys []string
			err := tx.kv.scan(bucketAuditDays, nil, func(k, _ []byte) error { keys = append(keys, string(k)); return nil })
			if want := auditDay(day(40).UnixNano()) + "/t2,pruned"; strings.Join(keys, ",") != want {
				t.Errorf("audit_days: %v, want %s", keys, want)
			}
			return err
		})
	})
}

// TestPruneAuditFirstTime: a store never pruned finds its old days by one
// read of the day index, and one without any remembers the day before
// the cutoff, so that later prunes read day by day.
func TestPruneAuditFirstTime(t *testing.T) {
	s, _ := openTest(t, Options{})
	update(t, s, func(tx *Tx) error {
		n, err := tx.PruneAudit(t0)
		if n != 0 || err != nil {
			t.Errorf("prune of nothing: %d, %v", n, err)
		}
		return err
	})
	view(t, s, func(tx *Tx) error {
		v, err := tx.kv.get(bucketAuditDays, auditPruned)
		if want := t0.AddDate(0, 0, -1).Format("20060102"); string(v) != want {
			t.Errorf("pruned mark %q, want %s", v, want)
		}
		return err
	})
}

// TestAuditMigration: a file of schema 3 gets the audit buckets when a
// daemon of this version opens it, with a copy of the old file aside.
func TestAuditMigration(t *testing.T) {
	s, path := openTest(t, Options{})
	seed(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	rawFile(t, path, func(btx *bolt.Tx) error {
		for _, b := range []string{bucketAudit, bucketAuditDays} {
			if err := btx.DeleteBucket([]byte(b)); err != nil {
				return err
			}
		}
		return putRaw(btx, bucketMeta, metaSchema, "3")
	})
	s = openAt(t, path, Options{})
	if s.Schema() != SchemaVersion {
		t.Fatalf("schema %d after the migration, want %d", s.Schema(), SchemaVersion)
	}
	update(t, s, func(tx *Tx) error {
		return tx.AppendAudit(Audit{TicketID: "t1", At: t0, Kind: "read now", Outcome: AuditOK, Cause: AuditOperator, Operator: "ana"})
	})
	if _, err := os.Stat(path + ".schema-3.bak"); err != nil {
		t.Fatalf("no copy of schema 3 aside: %v", err)
	}
}

// TestPostgresMigratesToAudit: a database of schema 4 migrates to the
// schema of the audit trails, keeps its rows and takes entries; the
// ticketbridge of schema 4 refuses the migrated database.
func TestPostgresMigratesToAudit(t *testing.T) {
	loc := postgresBackend(t).location(t)
	ctx := t.Context()
	s, err := openPG(ctx, loc, Options{Hotel: "h1"}, pgMigrations[:4])
	if err != nil {
		t.Fatal(err)
	}
	update(t, s, func(tx *Tx) error { return tx.PutTicket(Ticket{ID: "t1"}) })
	_ = s.Close()
	if s, err = openPG(ctx, loc, Options{Hotel: "h1"}, pgMigrations); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Schema() != PostgresSchemaVersion || PostgresSchemaVersion < 5 {
		t.Errorf("Schema = %d, want %d (past 4)", s.Schema(), PostgresSchemaVersion)
	}
	update(t, s, func(tx *Tx) error {
		if _, ok, err := tx.Ticket("t1"); !ok || err != nil {
			t.Errorf("t1 lost by the migration: %t, %v", ok, err)
		}
		return tx.AppendAudit(Audit{TicketID: "t1", At: t0, Kind: "ticket", Outcome: AuditOK, Cause: AuditListChange})
	})
	if got, err := s.AuditTrail(ctx, "t1"); err != nil || len(got) != 1 {
		t.Errorf("the trail after the migration: %v, %v", got, err)
	}
	if _, err := openPG(ctx, loc, Options{Hotel: "h1"}, pgMigrations[:4]); !errors.Is(err, ErrNewerSchema) {
		t.Errorf("the ticketbridge of schema 4 on the migrated database: err = %v, want ErrNewerSchema", err)
	}
}
