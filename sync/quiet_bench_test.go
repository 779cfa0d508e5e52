package sync_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"

	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/state/statetest"
	tbsync "github.com/ticketbridge/ticketbridge/sync"
)

// benchProfileEnv names a folder BenchmarkCycleQuiet writes the CPU and
// allocation profiles of its timed cycles to (the import left out), one
// pair per sub-benchmark: cpu-<name>.pprof, and mem-<name>.pprof to read
// with -base mem-<name>-base.pprof.
const benchProfileEnv = "TICKETBRIDGE_BENCH_PROFILE"

// benchLargeEnv makes BenchmarkCycleQuiet run its hotel of 10,000
// requests too; its import takes a while.
const benchLargeEnv = "TICKETBRIDGE_BENCH_LARGE"

// BenchmarkCycleQuiet measures a quiet hotel-cycle: every request tracked,
// nothing changed on either side and no request due (the clock does not
// move between cycles). It runs at 100 requests and, with
// TICKETBRIDGE_BENCH_LARGE=1, at 10,000; on bbolt, and on PostgreSQL when
// TICKETBRIDGE_TEST_POSTGRES names a database. The reference server runs
// in the same process: its share of ns/op is the lists it serves (a CPU
// profile tells the two apart with -ignore 'refserver').
func BenchmarkCycleQuiet(b *testing.B) {
	for _, n := range []int{100, 10000} {
		for _, be := range []string{"bbolt", "postgres"} {
			b.Run(fmt.Sprintf("%s/requests=%d", be, n), func(b *testing.B) {
				if n > 1000 && os.Getenv(benchLargeEnv) == "" {
					b.Skip("set " + benchLargeEnv + "=1 to run the hotel of 10,000 requests")
				}
				e := newEnv(b)
				if be == "postgres" {
					e.path = statetest.PostgresURL(b)
				}
				quietHotel(b, e, n)
				commits0, rt0 := e.store.Commits(), e.store.RoundTrips()
				var requests int
				b.ReportAllocs()
				stop := profileLoop(b)
				b.ResetTimer()
				for b.Loop() {
					rep := runBenchCycle(b, e)
					if rep.Discovered+rep.Refreshed+rep.Events+rep.Mirrored+rep.Sent != 0 {
						b.Fatalf("quiet cycle: %s", rep)
					}
					requests += rep.APIRequests
				}
				b.StopTimer()
				stop()
				per := func(v int64) float64 { return float64(v) / float64(b.N) }
				b.ReportMetric(per(e.store.Commits()-commits0), "commits/cycle")
				if be == "postgres" {
					b.ReportMetric(per(e.store.RoundTrips()-rt0), "roundtrips/cycle")
				}
				b.ReportMetric(float64(requests)/float64(b.N), "requests/cycle")
			})
		}
	}
}

// quietHotel gives e a hotel of n requests of one message each, spread
// over benchDepts departments, imports them and runs cycles until one is
// quiet.
func quietHotel(b *testing.B, e *env, n int) {
	b.Helper()
	addRequests(b, e, n, benchDepts)
	e.cfg.Concurrency = tbsync.DefaultConfig().Concurrency
	e.logs = nil
	e.open()
	for range 5 {
		rep := runBenchCycle(b, e)
		if rep.Discovered+rep.Refreshed+rep.Events+rep.Mirrored+rep.Sent == 0 {
			runBenchCycle(b, e) // the first quiet cycle stores its record
			return
		}
	}
	b.Fatal("no quiet cycle after the import")
}

// profileLoop starts the profiles of benchProfileEnv, when it is set, and
// returns what stops them.
func profileLoop(b *testing.B) func() {
	dir := os.Getenv(benchProfileEnv)
	if dir == "" {
		return func() {}
	}
	name := strings.NewReplacer("/", "-", "=", "").Replace(strings.TrimPrefix(b.Name(), "BenchmarkCycleQuiet/"))
	write := func(file string, fn func(*os.File) error) {
		f, err := os.Create(filepath.Join(dir, file))
		if err == nil {
			err = fn(f)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	heap := func(file string) {
		runtime.GC()
		write(file, func(f *os.File) error { return pprof.Lookup("allocs").WriteTo(f, 0) })
	}
	heap("mem-" + name + "-base.pprof")
	cpu, err := os.Create(filepath.Join(dir, "cpu-"+name+".pprof"))
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(cpu); err != nil {
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := cpu.Close(); err != nil {
			b.Fatal(err)
		}
		heap("mem-" + name + ".pprof")
	}
}

// addRequests adds n requests of one guest message each to e's hotel,
// spread over depts departments, and returns their ids.
func addRequests(b *testing.B, e *env, n, depts int) []string {
	b.Helper()
	ids := make([]string, 0, n)
	for i := range n {
		tv, err := e.ts.Server.CreateTicket(e.ts.Org, refserver.NewTicket{
			Department: fmt.Sprintf("dept%03d", i%depts), TaskDescription: fmt.Sprintf("request %d", i),
		})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := e.ts.Server.AddMessage(tv.ID, refserver.ConsoleMessage{
			AuthorType: guestapi.AuthorGuest, Body: fmt.Sprintf("a message of request %d", i),
		}); err != nil {
			b.Fatal(err)
		}
		ids = append(ids, tv.ID)
	}
	return ids
}
