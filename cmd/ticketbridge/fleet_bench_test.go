package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	gosync "sync"
	"syscall"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/memory"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/internal/bridge"
	"github.com/ticketbridge/ticketbridge/internal/testutil"
)

// BenchmarkFleet measures one daemon serving many hotels in steady state:
// 200 hotels (TICKETBRIDGE_FLEET_HOTELS) of 100 tracked requests each
// (TICKETBRIDGE_FLEET_TICKETS), each an organisation of one in-process
// reference server with a memory helpdesk of its own and a bbolt state
// file of its own, every hotel's cycle run at once each iteration after one
// new guest message per hotel. It reports the process's peak RSS (VmHWM:
// the reference server's requests and the memory helpdesks included), the
// CPU time (user + system, the reference server's included) per
// hotel-cycle against that of one hotel alone measured the same way (the
// same process and reference server, before the other hotels start), and
// the state's write transactions (bbolt commits, two fsyncs each: its
// round trips) per hotel-cycle, read from the files' meta pages, and the
// Go heap the running hotels hold (their memory helpdesks included, the
// reference server's requests not).
//
//	go test -run '^$' -bench BenchmarkFleet -benchtime 20x ./cmd/ticketbridge/
func BenchmarkFleet(b *testing.B) {
	hotels := testutil.EnvInt(b, "TICKETBRIDGE_FLEET_HOTELS", 200)
	tickets := testutil.EnvInt(b, "TICKETBRIDGE_FLEET_TICKETS", 100)

	// One hotel first, then all of them, in the same process against the
	// same reference server: its requests of every hotel weigh on the
	// collector alike in both measures.
	fx := newBenchFleet(b, hotels, tickets)
	const singleCycles = 40
	singleCPU, singleCommits := fx.measure(b, singleCycles)
	fx.startAll(b)

	var rounds []time.Duration
	var commits int64
	for b.Loop() {
		c, k := fx.measure(b, 1)
		rounds = append(rounds, c[0]/time.Duration(hotels))
		commits += k
	}
	// Medians: the machine's other load moves single samples.
	perHotelCycle, perCycleOne := median(rounds), median(singleCPU)
	b.ReportMetric(float64(heapInUse()-fx.heapBefore)/(1<<20), "hotels-heap-MB")
	b.ReportMetric(float64(peakRSSBytes(b))/(1<<20), "peak-RSS-MB")
	b.ReportMetric(float64(perHotelCycle.Microseconds()), "cpu-us/hotel-cycle")
	b.ReportMetric(float64(perCycleOne.Microseconds()), "cpu-us/cycle-one-hotel")
	b.ReportMetric(float64(perHotelCycle)/float64(perCycleOne), "cpu-ratio")
	b.ReportMetric(float64(commits)/float64(len(rounds)*hotels), "commits/hotel-cycle")
	b.ReportMetric(float64(singleCommits)/singleCycles, "commits/cycle-one-hotel")
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// benchFleet is a daemon of many hotels for the benchmark.
type benchFleet struct {
	fx    *fleetFixture
	names []string
	ids   map[string][]string // hotel -> its requests
	rnd   *rand.Rand
	// tickets is how many requests each hotel has.
	tickets int
	// heapBefore is the Go heap in use with the reference server's
	// requests made, before any hotel started.
	heapBefore uint64
}

func newBenchFleet(b *testing.B, hotels, tickets int) *benchFleet {
	b.Helper()
	fx := newFleetFixture(b)
	fx.MainVars["TICKETBRIDGE_ADAPTER"] = memory.Name
	fx.MainVars["TICKETBRIDGE_LOG_LEVEL"] = "error"
	// Every hotel has a memory helpdesk of its own.
	fx.registry = adapters.Registry{memory.Name: func(ctx context.Context, deps adapters.Deps) (adapters.Helpdesk, error) {
		return memory.Factory(memory.NewBackend())(ctx, deps)
	}}
	bf := &benchFleet{fx: fx, ids: map[string][]string{}, rnd: rand.New(rand.NewPCG(11, 11)), tickets: tickets}
	for i := range hotels {
		name := fmt.Sprintf("hotel-%03d", i)
		bf.names = append(bf.names, name)
		fx.WriteHotel(name, nil)
		for j := range tickets {
			tv, err := fx.TS.Server.CreateTicket(fx.Orgs[name], refserver.NewTicket{
				Department: fmt.Sprintf("dept%d", j%5), TaskDescription: fmt.Sprintf("request %d of %s: towels for room %d", j, name, 100+j),
			})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := fx.TS.Server.AddMessage(tv.ID, refserver.ConsoleMessage{AuthorType: guestapi.AuthorGuest, Body: "could we have two more towels, please?"}); err != nil {
				b.Fatal(err)
			}
			bf.ids[name] = append(bf.ids[name], tv.ID)
		}
		if i > 0 {
			if err := os.Remove(filepath.Join(fx.HotelsDir, name+".env")); err != nil {
				b.Fatal(err)
			}
		}
	}
	bf.heapBefore = heapInUse()
	fx.start()
	bf.imported(b, bf.names[:1])
	return bf
}

// startAll adds every other hotel to the running one and waits for their
// imports.
func (bf *benchFleet) startAll(b *testing.B) {
	b.Helper()
	for _, n := range bf.names[1:] {
		bf.fx.WriteHotel(n, nil)
	}
	if err := bf.fx.f.Reload(); err != nil {
		b.Fatal(err)
	}
	bf.imported(b, bf.names[1:])
}

// imported waits for the first cycle of each hotel named, which imports
// its requests.
func (bf *benchFleet) imported(b *testing.B, names []string) {
	b.Helper()
	for n, c := range bf.fx.WaitCycles(names...) {
		if c.Err != nil || c.Report.Created != bf.tickets {
			b.Fatalf("hotel %s's import: %v, %s", n, c.Err, c.Report)
		}
	}
}

// measure runs cycles of every hotel at once, each after one new guest
// message per hotel, and returns the CPU time each round of cycles took
// and the state commits of them all.
func (bf *benchFleet) measure(b *testing.B, cycles int) ([]time.Duration, int64) {
	b.Helper()
	running := bf.fx.running()
	var cpu []time.Duration
	var commits int64
	for range cycles {
		b.StopTimer()
		for _, n := range bf.names {
			ids := bf.ids[n]
			if _, err := bf.fx.TS.Server.AddMessage(ids[bf.rnd.IntN(len(ids))], refserver.ConsoleMessage{AuthorType: guestapi.AuthorGuest, Body: "one more thing: the window does not close"}); err != nil {
				b.Fatal(err)
			}
		}
		before := stateCommits(b, running)
		b.StartTimer()
		start := cpuTime(b)
		var wg gosync.WaitGroup
		for name, rh := range running {
			wg.Go(func() {
				rep, err := rh.Engine().RunCycle(context.Background())
				if err != nil || rep.Mirrored != 1 {
					b.Errorf("hotel %s: cycle: %v, %s", name, err, rep)
				}
			})
		}
		wg.Wait()
		cpu = append(cpu, cpuTime(b)-start)
		b.StopTimer()
		commits += stateCommits(b, running) - before
		b.StartTimer()
	}
	return cpu, commits
}

// stateCommits sums the transaction ids of the hotels' bbolt files: each
// committed write transaction adds one.
func stateCommits(b *testing.B, hs map[string]*bridge.Bridge) int64 {
	b.Helper()
	var sum int64
	for _, rh := range hs {
		sum += boltTxID(b, rh.Daemon().State.Value())
	}
	return sum
}

// boltTxID reads the newest transaction id of a bbolt file from its two
// meta pages (bbolt's layout: a 16-byte page header, then magic, version,
// page size and flags, 4 bytes each, the root bucket (16), the freelist
// and high-water page ids (8 each) and the transaction id).
func boltTxID(b *testing.B, path string) int64 {
	b.Helper()
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	head := make([]byte, 128)
	if _, err := f.ReadAt(head, 0); err != nil {
		b.Fatal(err)
	}
	pageSize := int64(binary.LittleEndian.Uint32(head[24:]))
	txid := int64(binary.LittleEndian.Uint64(head[64:]))
	if _, err := f.ReadAt(head, pageSize); err != nil {
		b.Fatal(err)
	}
	return max(txid, int64(binary.LittleEndian.Uint64(head[64:])))
}

// heapInUse is the Go heap in use after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// peakRSSBytes is the process's VmHWM, 0 where /proc is not there.
func peakRSSBytes(b *testing.B) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb << 10
		}
	}
	return 0
}
