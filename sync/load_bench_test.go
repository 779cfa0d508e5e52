package sync_test

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/internal/testutil"
	"github.com/ticketbridge/ticketbridge/state"
	tbsync "github.com/ticketbridge/ticketbridge/sync"
)

// The load a hotel chain's bridge sees: loadTickets tracked requests, and
// per cycle (30 s apart) loadNewTickets new requests and loadNewMessages
// new guest messages on random requests. TICKETBRIDGE_LOAD_TICKETS changes
// the number of tracked requests (for a quicker run on a small machine).
const (
	defaultLoadTickets = 10000
	loadNewTickets     = 100
	loadNewMessages    = 500
	loadDepartments    = 100 // 100 tickets each, under the list limit of 200
)

func loadTickets(b *testing.B) int {
	return testutil.EnvInt(b, "TICKETBRIDGE_LOAD_TICKETS", defaultLoadTickets)
}

// BenchmarkLoad measures cycles of the steady state over 10,000 tracked
// tickets (imported by a first cycle, then due at times spread over the
// quiet interval, as after a long run) while 100 new tickets and 500 new
// guest messages arrive between two cycles: the cycle's time, its API
// requests and reads, the process's peak RSS (VmHWM: the whole test
// process, the reference server and the memory helpdesk included), and
// the state file's size on disk (bbolt's free pages included), in all and
// per 1,000 mirrored messages (the tickets' records included). Every
// cycle lists every status, so every ticket a guest wrote on is read in
// the next cycle; the full-read safety net adds a 20th of the open tickets
// a cycle (10 min at 30 s). -benchtime 1x measures one cycle; a longer
// run shows the spread:
//
//	go test -run '^$' -bench BenchmarkLoad -benchtime 40x ./sync/
func BenchmarkLoad(b *testing.B) {
	n := loadTickets(b)
	rnd := rand.New(rand.NewPCG(7, 7))
	e := newEnv(b)
	e.cfg.Concurrency = tbsync.DefaultConfig().Concurrency
	var ids []string
	newTicket := func(status guestapi.Status, msgs int) {
		tv, err := e.ts.Server.CreateTicket(e.ts.Org, refserver.NewTicket{
			Department: fmt.Sprintf("dept%02d", len(ids)%loadDepartments), Status: status,
			TaskDescription: fmt.Sprintf("request %d: towels for room %d", len(ids), 100+rnd.IntN(900)),
		})
		if err != nil {
			b.Fatal(err)
		}
		for j := range msgs {
			if _, err := e.ts.Server.AddMessage(tv.ID, refserver.ConsoleMessage{
				AuthorType: guestapi.AuthorGuest, Body: fmt.Sprintf("message %d of request %d: could we have two more towels, please?", j, len(ids)),
			}); err != nil {
				b.Fatal(err)
			}
		}
		ids = append(ids, tv.ID)
	}
	// The tracked tickets: imported while new, most of them later taken
	// in hand (a list of new tickets holds only the fresh ones).
	for range n {
		newTicket(guestapi.StatusNew, 3)
	}
	e.cfg.Backfill = nil
	importStart := time.Now()
	rep := e.cycle()
	importTook := time.Since(importStart)
	if rep.Created != n || rep.Errors != 0 {
		b.Fatalf("import: %s", rep)
	}
	e.clock.Advance(time.Second) // a change moves updated_at past what the import read
	progress := []guestapi.Status{guestapi.StatusAssigned, guestapi.StatusInProgress, guestapi.StatusInProgress, guestapi.StatusDone}
	for _, id := range ids {
		if err := e.ts.Server.SetStatus(id, progress[rnd.IntN(len(progress))]); err != nil {
			b.Fatal(err)
		}
	}
	spreadDue(b, e.store, e.clock.Now(), e.cfg.QuietMax, rnd)

	var requests, refreshed, mirrored int
	var took time.Duration
	var times []time.Duration
	var reqs []int
	for b.Loop() {
		b.StopTimer()
		for range loadNewTickets {
			newTicket(guestapi.StatusNew, 1)
		}
		for range loadNewMessages {
			if _, err := e.ts.Server.AddMessage(ids[rnd.IntN(len(ids))], refserver.ConsoleMessage{
				AuthorType: guestapi.AuthorGuest, Body: "one more thing: the window does not close",
			}); err != nil {
				b.Fatal(err)
			}
		}
		e.clock.Advance(30 * time.Second)
		b.StartTimer()
		start := time.Now()
		rep := runBenchCycle(b, e)
		d := time.Since(start)
		took += d
		times = append(times, d)
		reqs = append(reqs, rep.APIRequests)
		if rep.Created != loadNewTickets {
			b.Fatalf("cycle: %s", rep)
		}
		requests += rep.APIRequests
		refreshed += rep.Refreshed
		mirrored += rep.Mirrored
	}
	b.StopTimer()
	st, err := e.store.Stats(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	cycles := float64(b.N)
	slices.Sort(times)
	slices.Sort(reqs)
	b.ReportMetric(float64(took.Milliseconds())/cycles, "ms/cycle")
	b.ReportMetric(float64(times[len(times)/2].Milliseconds()), "ms/cycle-p50")
	b.ReportMetric(float64(times[len(times)-1].Milliseconds()), "ms/cycle-max")
	b.ReportMetric(float64(requests)/cycles, "requests/cycle")
	b.ReportMetric(float64(reqs[len(reqs)/2]), "requests/cycle-p50")
	b.ReportMetric(float64(reqs[len(reqs)-1]), "requests/cycle-max")
	b.ReportMetric(float64(refreshed)/cycles, "reads/cycle")
	b.ReportMetric(float64(mirrored)/cycles, "mirrored/cycle")
	b.ReportMetric(float64(st.Tickets), "tracked-tickets")
	b.ReportMetric(importTook.Seconds(), "import-s")
	b.ReportMetric(float64(peakRSS(b))/(1<<20), "peak-RSS-MiB")
	b.ReportMetric(float64(st.FileSize)/(1<<20), "state-MiB")
	b.ReportMetric(float64(st.FileSize)/(float64(st.Mirrored)/1000), "state-B/1000msgs")
}

// spreadDue makes the tickets due at times spread evenly over the quiet
// interval, as they are once the bridge has run for a while.
func spreadDue(b *testing.B, st *state.Store, now time.Time, quiet time.Duration, rnd *rand.Rand) {
	b.Helper()
	err := st.Update(b.Context(), func(tx *state.Tx) error {
		var ts []state.Ticket
		if err := tx.ForEachTicket(func(t state.Ticket) error { ts = append(ts, t); return nil }); err != nil {
			return err
		}
		for _, t := range ts {
			t.NextDue, t.DueReason, t.QuietStreak = now.Add(time.Duration(rnd.Int64N(int64(quiet)))), tbsync.DueQuiet, 6
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

// peakRSS returns the process's peak resident set size (VmHWM), 0 where
// /proc is not there.
func peakRSS(tb testing.TB) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				tb.Fatalf("read VmHWM %q: %v", rest, err)
			}
			return kb << 10
		}
	}
	return 0
}
