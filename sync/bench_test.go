package sync_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters/memory"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/state"
	tbsync "github.com/ticketbridge/ticketbridge/sync"
)

const (
	benchTickets  = 1000
	benchMessages = 10
	benchDepts    = 10 // 100 tickets each: a full list is partitioned by department
)

// benchHotel is a reference server holding benchTickets tickets of
// benchMessages messages each.
func benchHotel(b *testing.B) *env {
	b.Helper()
	e := newEnv(b)
	for i := range benchTickets {
		tv, err := e.ts.Server.CreateTicket(e.ts.Org, refserver.NewTicket{
			Department: fmt.Sprintf("dept%02d", i%benchDepts), TaskDescription: fmt.Sprintf("request %d", i),
		})
		if err != nil {
			b.Fatal(err)
		}
		for j := range benchMessages {
			if _, err := e.ts.Server.AddMessage(tv.ID, refserver.ConsoleMessage{
				AuthorType: guestapi.AuthorGuest, Body: fmt.Sprintf("message %d of request %d", j, i),
			}); err != nil {
				b.Fatal(err)
			}
		}
	}
	e.cfg.Concurrency = tbsync.DefaultConfig().Concurrency
	return e
}

// freshEngine gives e an empty state file and an empty helpdesk.
func freshEngine(b *testing.B, e *env, n int) {
	b.Helper()
	if e.store != nil {
		e.store.Close()
		e.store = nil
	}
	e.path = filepath.Join(b.TempDir(), fmt.Sprintf("state-%d.db", n))
	e.backend = memory.NewBackend()
	e.backend.SetClock(e.clock.Now)
	e.open()
}

func runBenchCycle(b *testing.B, e *env) tbsync.Report {
	b.Helper()
	rep, err := e.engine.RunCycle(context.Background())
	if err != nil || rep.Errors != 0 {
		b.Fatalf("cycle: %v %s", err, rep)
	}
	return rep
}

// BenchmarkCycleImport measures the first cycle over 1,000 tickets of 10
// messages: every ticket discovered, created and its thread appended.
func BenchmarkCycleImport(b *testing.B) {
	e := benchHotel(b)
	var requests, tickets int
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		freshEngine(b, e, i)
		b.StartTimer()
		rep := runBenchCycle(b, e)
		if rep.Created != benchTickets || rep.Mirrored != benchTickets*benchMessages {
			b.Fatalf("import: %s", rep)
		}
		requests += rep.APIRequests
		tickets += rep.Refreshed
	}
	b.ReportMetric(float64(requests)/float64(b.N), "requests/cycle")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(tickets), "ns/ticket")
}

// BenchmarkCycleIdle measures a cycle over the same 1,000 tracked tickets
// when nothing changed and no ticket is due: the steady state between two
// reads of quiet tickets (the clock does not move between cycles).
func BenchmarkCycleIdle(b *testing.B) {
	benchSteady(b, 0, false)
}

// BenchmarkCycleRecheck measures a cycle when nothing changed but every
// ticket is due again (quiet tickets coming round): the worst idle cycle.
func BenchmarkCycleRecheck(b *testing.B) {
	benchSteady(b, 0, true)
}

func benchSteady(b *testing.B, step time.Duration, allDue bool) {
	e := benchHotel(b)
	freshEngine(b, e, 0)
	runBenchCycle(b, e)
	var requests int
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if allDue {
			b.StopTimer()
			makeAllDue(b, e.store, e.clock.Now())
			b.StartTimer()
		}
		e.clock.Advance(step)
		rep := runBenchCycle(b, e)
		if rep.Mirrored+rep.Created+rep.Sent+rep.StatusDown != 0 || (allDue && rep.Refreshed != benchTickets) {
			b.Fatalf("steady cycle: %s", rep)
		}
		requests += rep.APIRequests
	}
	b.ReportMetric(float64(requests)/float64(b.N), "requests/cycle")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchTickets, "ns/ticket")
}

// makeAllDue marks every ticket due now, as when their quiet backoff ends.
func makeAllDue(b *testing.B, st *state.Store, now time.Time) {
	b.Helper()
	err := st.Update(b.Context(), func(tx *state.Tx) error {
		var ts []state.Ticket
		if err := tx.ForEachTicket(func(t state.Ticket) error { ts = append(ts, t); return nil }); err != nil {
			return err
		}
		for _, t := range ts {
			t.NextDue = now
			if err := tx.PutTicket(t); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}
