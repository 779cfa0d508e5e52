package sync_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	gosync "sync"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver/refservertest"
	"github.com/ticketbridge/ticketbridge/internal/atomicfile"
	"github.com/ticketbridge/ticketbridge/internal/testutil"
	tbsync "github.com/ticketbridge/ticketbridge/sync"
)

// Variables of BenchmarkImport: the hotel's requests (default 1,000; the
// issue's figure is at 10,000) and the reads in flight (default the
// engine's Concurrency).
const (
	benchImportEnv     = "TICKETBRIDGE_BENCH_IMPORT"
	benchImportConcEnv = "TICKETBRIDGE_BENCH_IMPORT_CONCURRENCY"
	// benchImportLatencyEnv, a duration, is added before every answer of
	// the API (default none): a hosted API answers in tens of
	// milliseconds, the reference server in process in microseconds.
	benchImportLatencyEnv = "TICKETBRIDGE_BENCH_IMPORT_LATENCY"
)

// BenchmarkImport measures the first cycle of a hotel (files helpdesk,
// bbolt state, the reference server in the same process) against the
// API's own time to serve the same thread reads: a pool of Concurrency
// workers reading every request once, as readAll pools them. The import
// can come no nearer than that; import/api says how near it comes. Each
// request holds one guest message, the requests spread over departments
// of 150 at most (a list shows 200 at most, and the import must see them
// all in its first cycle). Logs are discarded.
//
// TICKETBRIDGE_BENCH_IMPORT_LATENCY adds a latency to every answer, as
// a hosted API has.
//
//	TICKETBRIDGE_BENCH_IMPORT=10000 go test -run '^$' -bench BenchmarkImport -benchtime 1x ./sync/
//	TICKETBRIDGE_BENCH_IMPORT=10000 TICKETBRIDGE_BENCH_IMPORT_LATENCY=50ms TICKETBRIDGE_BENCH_IMPORT_CONCURRENCY=32 \
//	  go test -run '^$' -bench BenchmarkImport -benchtime 1x ./sync/
func BenchmarkImport(b *testing.B) {
	n := testutil.EnvInt(b, benchImportEnv, 1000)
	conc := testutil.EnvInt(b, benchImportConcEnv, tbsync.DefaultConfig().Concurrency)
	depts := max(benchDepts, (n+149)/150)
	var opts []refservertest.Option
	if v := os.Getenv(benchImportLatencyEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			b.Fatalf("%s=%q: want a duration such as 50ms", benchImportLatencyEnv, v)
		}
		opts = append(opts, refservertest.WithOptions(refserver.Options{
			Faults: refserver.Faults{Latency: d, LatencyRate: 1},
			Sleep: func(ctx context.Context, d time.Duration) error { // on the wall clock: the latency is real
				t := time.NewTimer(d)
				defer t.Stop()
				select {
				case <-t.C:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			},
		}))
	}
	e := newEnv(b, opts...)
	ids := addRequests(b, e, n, depts)
	e.cfg.Concurrency = conc
	e.logs = nil
	api := e.client(e.key)
	var apiTime, importTime time.Duration
	var fsyncs, commits int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// The API's own time: every thread read once, conc at a time.
		t0 := time.Now()
		readPool(b, api, ids, conc)
		apiTime += time.Since(t0)

		b.StopTimer()
		if e.store != nil {
			e.store.Close()
			e.store = nil
		}
		dir := b.TempDir()
		e.path, e.filesDir = filepath.Join(dir, "state.db"), filepath.Join(dir, "helpdesk")
		e.open()
		syncs0, commits0 := atomicfile.Syncs(), e.store.Commits()
		b.StartTimer()

		t0 = time.Now()
		rep := runBenchCycle(b, e)
		importTime += time.Since(t0)
		if rep.Created != n || rep.Mirrored != n {
			b.Fatalf("import: %s", rep)
		}
		fsyncs += atomicfile.Syncs() - syncs0
		commits += e.store.Commits() - commits0
	}
	b.StopTimer()
	per := func(d time.Duration) float64 { return d.Seconds() / float64(b.N) }
	ratio := importTime.Seconds() / apiTime.Seconds()
	b.ReportMetric(per(apiTime), "api-s")
	b.ReportMetric(per(importTime), "import-s")
	b.ReportMetric(ratio, "import/api")
	b.ReportMetric(float64(fsyncs)/float64(b.N*n), "helpdesk-fsyncs/ticket")
	b.ReportMetric(float64(2*commits)/float64(b.N*n), "state-fsyncs/ticket")
	b.ReportMetric(0, "ns/op")
	b.Logf("%d requests, %d reads in flight: the API's own reads %.2f s, the import %.2f s (%.2f times)",
		n, conc, per(apiTime), per(importTime), ratio)
}

// readPool reads the thread of every id, conc reads at a time.
func readPool(b *testing.B, api *guestapi.Client, ids []string, conc int) {
	b.Helper()
	work := make(chan string)
	errs := make(chan error, conc)
	var wg gosync.WaitGroup
	for range conc {
		wg.Go(func() {
			var first error
			for id := range work {
				if _, err := api.GetTicket(context.Background(), id); err != nil && first == nil {
					first = fmt.Errorf("read %s: %w", id, err)
				}
			}
			errs <- first
		})
	}
	for _, id := range ids {
		work <- id
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
}
